/** Outstanding nonces one instance keeps at most: past it the oldest are forgotten (refused). */
const MOST_OUTSTANDING = 100_000;

/**
 * The sign-in nonces one instance issued and not yet taken, in its memory (docs/proof.md, "How a
 * sign-in is checked"). A nonce lives five minutes and is worth nothing after a restart: kept on
 * disk, issuing and taking one would each wait for a committed write (0.35 ms and more, more than
 * a whole `GET /health`); kept here, a nonce issued before a restart is simply unknown after it,
 * so it is refused and can never be taken twice. One process owns a DATA_DIR (its lock file); a
 * fleet shares its nonces through Redis instead. Forgetting (expiry, the cap) only ever refuses.
 */
export class IssuedNonces {
  /** nonce → expiry (epoch ms), in the order issued. */
  private readonly expiries = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  issue(nonce: string, ttlMs: number): void {
    this.forgetExpired();
    if (this.expiries.size >= MOST_OUTSTANDING) this.forgetOldest();
    this.expiries.delete(nonce);
    this.expiries.set(nonce, this.now() + ttlMs);
  }

  /** True once for an issued nonce while it lives; false ever after, and for any other. */
  take(nonce: string): boolean {
    const expiry = this.expiries.get(nonce);
    this.expiries.delete(nonce);
    return expiry !== undefined && expiry > this.now();
  }

  /** Issued in order with one lifetime, so the expired are the first ones. */
  private forgetExpired(): void {
    const now = this.now();
    for (const [nonce, expiry] of this.expiries) {
      if (expiry > now) return;
      this.expiries.delete(nonce);
    }
  }

  private forgetOldest(): void {
    for (const nonce of this.expiries.keys()) {
      this.expiries.delete(nonce);
      return;
    }
  }
}
