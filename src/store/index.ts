export type {
  Acquired,
  KeptAnswer,
  Lease,
  PaymentIdBinding,
  PaymentRecord,
  PaymentRecordStore,
  PaymentState,
} from "./records.js";
export { MemoryPaymentRecordStore } from "./memory.js";
