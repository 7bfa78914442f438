/**
 * `npm run bench`: runs each benchmark part as its own child process, one after the other, so
 * a part's memory and CPU state never leak into the next and each stays runnable alone.
 *
 *   npm run bench                         every part
 *   npm run bench -- snapshot [lines…]    one part; further arguments go to that part
 *   npm run bench -- observatory          our scan vs MDN Observatory's (root: ports 80/443)
 *   npm run bench -- payment
 *   npm run bench -- mcp
 *   npm run bench -- reshape [--old <commit>]   an older commit's paid call beside this tree's
 *   npm run bench -- startup
 *   npm run bench -- scan-ci                   20 sites in one `scan` beside 20 runs
 *   npm run bench -- fleet | redis402 | trickle | store
 *
 * Exits non-zero if any part fails (a missed target, a broken run).
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const PARTS = [
  "snapshot",
  "observatory",
  "payment",
  "mcp",
  "reshape",
  "startup",
  "scan-ci",
  "hostile",
  "telemetry",
  "fleet",
  "redis402",
  "trickle",
  "store",
] as const;
type Part = (typeof PARTS)[number];

const partFile = (part: Part) => fileURLToPath(new URL(`./${part}.ts`, import.meta.url));

function runPart(part: Part, args: string[]): Promise<number> {
  // Same node, same tsx loader flags this process was started with.
  const child = spawn(process.execPath, [...process.execArgv, partFile(part), ...args], {
    stdio: "inherit",
  });
  return new Promise((resolve) => {
    child.on("error", (err) => {
      console.error(`bench ${part}: ${err.message}`);
      resolve(1);
    });
    child.on("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

async function main(): Promise<number> {
  const args = process.argv.slice(2).filter((a) => a !== "--");
  const first = args[0];
  if (first !== undefined && !PARTS.includes(first as Part)) {
    console.error(`unknown benchmark part "${first}"; choose from: ${PARTS.join(", ")}`);
    return 2;
  }
  const chosen =
    first !== undefined ? [first as Part] : PARTS.filter((p) => existsSync(partFile(p)));
  const failed: Part[] = [];
  for (const part of chosen) {
    if (!existsSync(partFile(part))) {
      console.error(`bench ${part}: ${partFile(part)} does not exist`);
      failed.push(part);
      continue;
    }
    console.log(`\n=== bench: ${part} ===`);
    if ((await runPart(part, first !== undefined ? args.slice(1) : [])) !== 0) failed.push(part);
  }
  console.log(
    failed.length === 0
      ? `\nbench: all parts passed (${chosen.join(", ")})`
      : `\nbench: FAILED: ${failed.join(", ")}`,
  );
  return failed.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
