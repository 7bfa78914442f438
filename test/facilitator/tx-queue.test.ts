import { describe, expect, it } from "vitest";
import { WalletTxQueue } from "../../src/facilitator/tx-queue.js";

const tick = () => new Promise((r) => setImmediate(r));

describe("WalletTxQueue", () => {
  it("runs submissions one at a time with consecutive nonces, in arrival order", async () => {
    let reads = 0;
    const queue = new WalletTxQueue(async () => {
      reads++;
      return 7;
    });
    let active = 0;
    let maxActive = 0;
    const order: number[] = [];
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        queue.submit(async (nonce) => {
          active++;
          maxActive = Math.max(maxActive, active);
          await tick();
          order.push(i);
          active--;
          return nonce;
        }),
      ),
    );
    expect(results).toEqual([7, 8, 9, 10, 11]);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    expect(maxActive).toBe(1);
    expect(reads).toBe(1);
  });

  it("re-reads the nonce from the node after a failed submission and keeps serving", async () => {
    const nodeNonces = [3, 9];
    const queue = new WalletTxQueue(async () => nodeNonces.shift() ?? -1);
    const first = queue.submit(async (nonce) => nonce);
    const failing = queue.submit(async () => {
      throw new Error("estimateGas reverted");
    });
    const after = queue.submit(async (nonce) => nonce);
    expect(await first).toBe(3);
    await expect(failing).rejects.toThrow("estimateGas reverted");
    // Not 4 or 5: after a failure the queue asks the node again (here it says 9).
    expect(await after).toBe(9);
    expect(nodeNonces).toEqual([]);
  });
});
