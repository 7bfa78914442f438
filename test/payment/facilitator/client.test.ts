/**
 * ResilientFacilitatorClient against a real HTTP facilitator stand-in that answers late: verify and
 * settle have separate bounds, and a missed bound is "unavailable" (→ 503), not a payment verdict.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  FacilitatorUnavailableError,
  ResilientFacilitatorClient,
} from "../../../src/payment/index.js";

const ANSWER_DELAY_MS = 600;
let server: Server;
let url: string;

beforeAll(async () => {
  // Every answer comes ANSWER_DELAY_MS late: past a short bound, well within a long one.
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      setTimeout(() => {
        const body =
          req.url === "/settle"
            ? { success: true, transaction: "0x" + "12".repeat(32), network: "eip155:84532" }
            : { isValid: true, payer: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" };
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
      }, ANSWER_DELAY_MS);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const requirements = {
  scheme: "exact",
  network: "eip155:84532",
  amount: "50000",
  asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
  payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
  maxTimeoutSeconds: 300,
  extra: { name: "USDC", version: "2" },
} as PaymentRequirements;
const payload = { x402Version: 2, accepted: requirements, payload: {} } as PaymentPayload;

it("bounds settle by settleTimeoutMs and everything else by timeoutMs", async () => {
  const client = new ResilientFacilitatorClient({ url, timeoutMs: 100, settleTimeoutMs: 30_000 });
  await expect(client.verify(payload, requirements)).rejects.toBeInstanceOf(
    FacilitatorUnavailableError,
  );
  await expect(client.settle(payload, requirements)).resolves.toMatchObject({ success: true });
});

it("without settleTimeoutMs, settle has the same bound as the other calls", async () => {
  const client = new ResilientFacilitatorClient({ url, timeoutMs: 100 });
  await expect(client.settle(payload, requirements)).rejects.toBeInstanceOf(
    FacilitatorUnavailableError,
  );
  const patient = new ResilientFacilitatorClient({ url, timeoutMs: 30_000 });
  await expect(patient.verify(payload, requirements)).resolves.toMatchObject({ isValid: true });
});
