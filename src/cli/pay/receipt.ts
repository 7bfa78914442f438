/**
 * What `secsnap pay` keeps of a paid call (docs/contract.md §8.1): the report in `--output FILE`
 * (else on stdout), its `snapshot_id` named on stderr, and the settlement response with the
 * service's signed receipt in `--receipt FILE`, by default beside `--output`.
 */
import { accessSync, constants, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { SettleResponse } from "@x402/core/types";
import { UsageError, type CliOutput } from "../command.js";

/** A file option, checked before anything is signed: its directory must be writable. */
export function writablePath(file: string, option: string): string {
  const path = resolve(file);
  try {
    accessSync(dirname(path), constants.W_OK);
  } catch {
    throw new UsageError(`${option}: cannot write in ${dirname(path)}`);
  }
  return path;
}

/** The receipt's default file beside the report's: `report.json` → `report.receipt.json`. */
export function receiptBeside(output: string): string {
  return `${output.replace(/\.json$/i, "")}.receipt.json`;
}

/**
 * The report kept in `path`, said on stderr; a report that cannot be written is not lost: it
 * goes to stdout instead, as without `--output`.
 */
export function keepReport(
  text: string,
  path: string,
  stdout: CliOutput,
  stderr: CliOutput,
  command = "pay",
): void {
  try {
    writeFileSync(path, text);
    stderr.write(`secsnap ${command}: report kept in ${path}\n`);
  } catch (err) {
    stderr.write(
      `secsnap ${command}: cannot write ${path} (${(err as Error).message}); the report follows on stdout\n`,
    );
    stdout.write(text);
  }
}

/** The `proof.snapshot_id` of a paid report, if it carries one. */
function snapshotIdOf(report: unknown): string | undefined {
  const proof = (report as { proof?: { snapshot_id?: unknown } } | null)?.proof;
  return typeof proof?.snapshot_id === "string" ? proof.snapshot_id : undefined;
}

/**
 * The report's id on stderr, and the settlement kept in `path` (JSON, as the settlement header
 * carried it). A receipt that cannot be written is not lost: it goes to stderr instead.
 */
export function keepProofOfPurchase(
  report: unknown,
  settlement: SettleResponse | undefined,
  path: string | undefined,
  stderr: CliOutput,
): void {
  const id = snapshotIdOf(report);
  stderr.write(
    id ? `secsnap pay: snapshot_id ${id}\n` : "secsnap pay: the report carries no snapshot_id\n",
  );
  if (path === undefined) return;
  if (!settlement) {
    stderr.write("secsnap pay: no receipt kept: the settlement header was unreadable\n");
    return;
  }
  const json = `${JSON.stringify(settlement, null, 2)}\n`;
  try {
    writeFileSync(path, json);
    stderr.write(`secsnap pay: settlement and receipt kept in ${path}\n`);
  } catch (err) {
    stderr.write(
      `secsnap pay: cannot write ${path} (${(err as Error).message}); the settlement and receipt:\n${json}`,
    );
  }
}
