/**
 * `npm run soak`: the money soak (docs/faults.md, "The soak"). Paid calls over both x402
 * generations and both routes while faults strike at random, then an audit on chain of every
 * signed authorization; prints the tally and exits 1 on any violation (2 when calls could not be
 * run at all).
 *
 *   npm run soak -- [--calls 200] [--seed N] [--concurrency 3] [--only i,j]
 *
 * Without --seed one is drawn and printed: `--seed N` draws the same plans again, `--only i`
 * runs only call i of them (with the same --calls or more, and redis-server present or not as
 * before). Without redis-server the Redis store and its restarts are left out, with one line
 * naming the Debian package (under CI=true that is an error).
 */
import { randomInt } from "node:crypto";
import { parseArgs } from "node:util";
import { formatTally, runSoak, violationsOf } from "../test/fixtures/soak.js";

function options() {
  const { values } = parseArgs({
    options: {
      calls: { type: "string", default: "200" },
      seed: { type: "string" },
      concurrency: { type: "string", default: "3" },
      only: { type: "string" },
    },
  });
  const whole = (name: string, value: string) => {
    if (!/^\d+$/.test(value)) throw new Error(`--${name} must be a whole number, not "${value}"`);
    return Number(value);
  };
  return {
    calls: whole("calls", values.calls),
    seed: values.seed === undefined ? randomInt(2 ** 31) : whole("seed", values.seed),
    concurrency: whole("concurrency", values.concurrency),
    ...(values.only !== undefined && { only: values.only.split(",").map((i) => whole("only", i)) }),
  };
}

async function main(): Promise<number> {
  const chosen = options();
  console.log(`soak: seed ${chosen.seed} (replay with --seed ${chosen.seed})`);
  const result = await runSoak({ ...chosen, log: (line) => console.log(line) });
  console.log(`\n${formatTally(result)}`);
  if (violationsOf(result).length > 0) return 1;
  return result.calls.some((c) => c.error !== undefined) ? 2 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
