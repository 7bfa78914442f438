import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import type { JSONWebKeySet } from "jose";
import { PATHS } from "../routes.js";
import { verifyReportProof } from "../payment/index.js";
import { UsageError, type Command } from "./command.js";

/** How long fetching a JWKS may take. */
const FETCH_TIMEOUT_MS = 10_000;

/**
 * Where the keys are: the report names its key (`kid`) but not the service that signed it, so
 * the verifier says which service it trusts (docs/proof.md, "Verifying").
 */
function jwksSource(values: { jwks?: string; service?: string }): string {
  if (values.jwks !== undefined && values.service !== undefined) {
    throw new UsageError("give --jwks or --service, not both");
  }
  if (values.service !== undefined) {
    if (!/^https?:\/\//.test(values.service)) {
      throw new UsageError("--service must be the service's http(s) URL");
    }
    return `${values.service.replace(/\/+$/, "")}${PATHS.jwks}`;
  }
  if (values.jwks === undefined) {
    throw new UsageError("say whose keys to check against: --service URL or --jwks FILE|URL");
  }
  return values.jwks;
}

async function readJwks(source: string): Promise<JSONWebKeySet> {
  let text: string;
  if (/^https?:\/\//.test(source)) {
    const answer = await fetch(source, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    if (!answer.ok) throw new Error(`${source} answered ${answer.status}`);
    text = await answer.text();
  } else {
    text = await readFile(source, "utf8");
  }
  const jwks = JSON.parse(text) as Partial<JSONWebKeySet>;
  if (!Array.isArray(jwks.keys)) throw new Error(`${source} is not a JWK Set (no "keys")`);
  return jwks as JSONWebKeySet;
}

/** The report and the keys, or why one of them cannot be read. */
async function inputs(
  file: string,
  source: string,
): Promise<{ report: unknown; jwks: JSONWebKeySet } | { why: string }> {
  let report: unknown;
  try {
    report = JSON.parse(await readFile(file, "utf8"));
  } catch (error) {
    return { why: `cannot read the report: ${(error as Error).message}` };
  }
  try {
    return { report, jwks: await readJwks(source) };
  } catch (error) {
    return { why: `cannot read the keys: ${(error as Error).message}` };
  }
}

export const verifyCommand: Command = {
  usage: [
    "Usage: secsnap verify <report.json> (--service URL | --jwks FILE|URL)",
    "",
    "Checks a paid report's proof: report_sha256 against the report (RFC 8785 canonical JSON,",
    "proof left out), then the EdDSA signature over the proof against the service's keys.",
    "",
    "Options:",
    `  --service URL   the service the report came from: its keys at URL${PATHS.jwks}`,
    "  --jwks FILE|URL a JWK Set, as a file or an http(s) URL",
    "",
    "Exit codes: 0 verified (what was verified is printed), 1 not verified or bad usage (why",
    "is printed on stderr).",
  ].join("\n"),

  async run({ args, stdout, stderr }) {
    const { values, positionals } = parseArgs({
      args,
      options: { jwks: { type: "string" }, service: { type: "string" } },
      allowPositionals: true,
    });
    if (positionals.length !== 1) throw new UsageError("give one report file");
    const source = jwksSource(values);
    const read = await inputs(positionals[0] as string, source);
    const check = "why" in read ? read : await verifyReportProof(read.report, read.jwks);
    if ("why" in check) {
      stderr.write(`not verified: ${check.why}\n`);
      return 1;
    }
    const { proof } = check;
    stdout.write(
      `verified: report_sha256 ${proof.report_sha256} matches the report, signed by key ${proof.kid} of ${source}\n` +
        `snapshot ${proof.snapshot_id} issued ${proof.issued_at}, paid by ${proof.payer} on ${proof.network}, transaction ${proof.transaction}\n`,
    );
    return 0;
  },
};
