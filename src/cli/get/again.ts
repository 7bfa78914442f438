/**
 * A paid report again (docs/contract.md §10.4), as `secsnap get` and `secsnap mcp`'s
 * `get_snapshot` ask for it: `GET /v1/snapshots/{id}`, its sign-in challenge answered with an
 * EIP-4361 message signed by the paying wallet, by the x402 `sign-in-with-x` extension's own
 * functions. x402's client path for a sign-in-only route (`wrapFetchWithPayment` with
 * `createSIWxClientHook`) gets the same report, but its hook swallows why it did not sign (a
 * challenge for another origin), which this client says. `wrapFetchWithSIWx` is for routes that
 * also take payment: it takes its chain from `accepts[0]`, which this route leaves empty, so it
 * does not answer this 402 (docs/proof.md, "Getting the report again").
 */
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import {
  SIGN_IN_WITH_X,
  assertSIWxChallengeBoundToOrigin,
  createSIWxPayload,
  encodeSIWxHeader,
  type SIWxExtension,
} from "@x402/extensions/sign-in-with-x";
import { privateKeyToAccount, type LocalAccount } from "viem/accounts";
import { DEFAULT_PAYER } from "../../devnet/index.js";
import { PATHS } from "../../routes.js";
import { describeBody } from "../pay/offer.js";
import { checkedKey } from "../pay/options.js";
import { noAnswer } from "../pay/send.js";

/** Bound on each of the two requests. */
const REQUEST_TIMEOUT_MS = 30_000;

export type SnapshotAgain =
  /** The report: the paid 200's bytes, as served. */
  | { kind: "report"; body: string }
  /** The API said no: its status, its error code and sentence. */
  | { kind: "refused"; status: number; code: string | undefined; why: string }
  /** A 402 this client does not sign: another origin's, or no sign-in on an EVM chain. */
  | { kind: "unsigned"; why: string }
  /** No answer. */
  | { kind: "failed"; why: string };

/**
 * The wallet that signs in: the one `secsnap pay` pays with. SECSNAP_PRIVATE_KEY, else anvil's
 * test account 2, the devnet payer: a sign-in moves no money, so a public key risks nothing.
 */
export function signInAccount(key: string | undefined): { account: LocalAccount; note?: string } {
  if (key) return { account: privateKeyToAccount(checkedKey(key)) };
  const account = privateKeyToAccount(DEFAULT_PAYER.privateKey);
  return {
    account,
    note: `no SECSNAP_PRIVATE_KEY: signing in as anvil test account ${DEFAULT_PAYER.index} (${account.address}), the devnet payer`,
  };
}

/** `<api>/v1/snapshots/<id>`, the id as one path segment. */
function snapshotAgainUrl(base: URL, id: string): URL {
  const path = PATHS.snapshotAgain.slice(1).replace("{snapshot_id}", encodeURIComponent(id));
  return new URL(path, base);
}

/** The report kept under `id`, signed in as `account`; or why not. */
export async function getSnapshotAgain(
  base: URL,
  id: string,
  account: LocalAccount,
  signal?: AbortSignal,
): Promise<SnapshotAgain> {
  const url = snapshotAgainUrl(base, id);
  try {
    const first = await get(url, {}, signal);
    if (first.status !== 402) return await outcome(first);
    const header = await signIn(first, url, account);
    if (typeof header !== "string") return header;
    return await outcome(await get(url, { [SIGN_IN_WITH_X]: header }, signal));
  } catch (err) {
    return { kind: "failed", why: `GET ${url.href}: ${noAnswer(err)}` };
  }
}

function get(url: URL, headers: Record<string, string>, signal?: AbortSignal): Promise<Response> {
  const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
  return fetch(url, {
    headers: { Accept: "application/json", ...headers },
    // A challenge is answered only for the origin asked: no redirect elsewhere is followed.
    redirect: "manual",
    signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
  });
}

/** The report of a 200, else the refusal (`{error, code}`, or the body as it is). */
async function outcome(response: Response): Promise<SnapshotAgain> {
  const text = await response.text();
  if (response.status === 200) return { kind: "report", body: text };
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: described as text.
  }
  const { error, code } = (body ?? {}) as { error?: unknown; code?: unknown };
  return {
    kind: "refused",
    status: response.status,
    code: typeof code === "string" ? code : undefined,
    why: typeof error === "string" ? error : describeBody(body),
  };
}

/**
 * The SIGN-IN-WITH-X header answering a 402's challenge: bound to the origin asked, on an EVM
 * chain it offers (the wallet is an EVM key), signed (EIP-191) by `account`.
 */
async function signIn(
  unsigned: Response,
  url: URL,
  account: LocalAccount,
): Promise<string | SnapshotAgain> {
  const encoded = unsigned.headers.get("payment-required");
  let extension: SIWxExtension | undefined;
  try {
    const required: PaymentRequired = encoded
      ? decodePaymentRequiredHeader(encoded)
      : ((await unsigned.json()) as PaymentRequired);
    extension = required.extensions?.[SIGN_IN_WITH_X] as SIWxExtension | undefined;
  } catch (err) {
    return { kind: "unsigned", why: `the API's 402 cannot be read: ${(err as Error).message}` };
  }
  const chain = extension?.supportedChains?.find((c) => c.chainId.startsWith("eip155:"));
  if (!extension?.info || !chain) {
    return { kind: "unsigned", why: "the API's 402 offers no sign-in-with-x on an EVM chain" };
  }
  try {
    assertSIWxChallengeBoundToOrigin(extension.info, url);
    const info = { ...extension.info, chainId: chain.chainId, type: chain.type };
    return encodeSIWxHeader(await createSIWxPayload(info, account, url));
  } catch (err) {
    return { kind: "unsigned", why: `not signed in: ${(err as Error).message}` };
  }
}
