/** The store contract (test/store/contract.ts) against the in-memory test double. */
import { MemoryPaymentRecordStore } from "../../src/store/index.js";
import { storeContract } from "./contract.js";

storeContract("memory", (options) => Promise.resolve(new MemoryPaymentRecordStore(options)));
