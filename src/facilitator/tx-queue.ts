/**
 * One submission queue per gas wallet. Settlements arrive concurrently, but an EOA's
 * transactions must carry consecutive nonces: two sends that both read the "pending" nonce
 * from the RPC at the same moment would collide (one replaced or rejected). So every
 * transaction from a wallet is submitted strictly one after another, with the nonce tracked
 * here. Only submission is serialized; waiting for receipts stays concurrent.
 *
 * Hand-written (a promise chain and a counter) so that gas estimation, signing and sending of
 * one transaction finish before the next one starts, and a failed send re-reads the nonce.
 */
export class WalletTxQueue {
  private tail: Promise<unknown> = Promise.resolve();
  private nextNonce: number | undefined;

  constructor(private readonly fetchPendingNonce: () => Promise<number>) {}

  /**
   * Runs `submit` with the wallet's next nonce once every earlier submission has finished.
   * `submit` must resolve once the transaction is accepted by the node (it must not wait for
   * the receipt). If it throws, the nonce is re-read from the node before the next submission,
   * since a failure may or may not have consumed it.
   */
  submit<T>(submit: (nonce: number) => Promise<T>): Promise<T> {
    const run = async (): Promise<T> => {
      this.nextNonce ??= await this.fetchPendingNonce();
      const nonce = this.nextNonce;
      try {
        const result = await submit(nonce);
        this.nextNonce = nonce + 1;
        return result;
      } catch (error) {
        this.nextNonce = undefined;
        throw error;
      }
    };
    const result = this.tail.then(run, run);
    // The chain must continue whether this submission succeeded or not.
    this.tail = result.catch(() => undefined);
    return result;
  }
}

const queues = new Map<string, WalletTxQueue>();

/**
 * The queue for one wallet on one RPC endpoint, shared by everything in this process that
 * sends from that wallet (several facilitator apps built on the same key included).
 */
export function walletTxQueue(
  rpcUrl: string,
  address: string,
  fetchPendingNonce: () => Promise<number>,
): WalletTxQueue {
  const key = `${rpcUrl}|${address.toLowerCase()}`;
  let queue = queues.get(key);
  if (!queue) {
    queue = new WalletTxQueue(fetchPendingNonce);
    queues.set(key, queue);
  }
  return queue;
}
