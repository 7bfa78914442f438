/**
 * The samples of docs/deploy.md as the tests read them: the files in deploy/, and the
 * environment file as variables, its placeholders filled with values the service accepts.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../cli/run.js";

export function deployFile(path: string): string {
  return readFileSync(join(ROOT, path), "utf8");
}

/** deploy/secsnap.env's `NAME=value` lines (no quoting: systemd's EnvironmentFile takes them as they are). */
export function envFile(): Record<string, string> {
  const lines = deployFile("deploy/secsnap.env").split("\n");
  const pairs = lines
    .filter((line) => line.trim() !== "" && !line.startsWith("#"))
    .map((line) => {
      const at = line.indexOf("=");
      return [line.slice(0, at), line.slice(at + 1)] as const;
    });
  return Object.fromEntries(pairs);
}

/** The placeholders the operator replaces, and a value of the same kind for the tests. */
const PLACEHOLDERS: Record<string, string> = {
  "0xYourReceivingAddress": "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
  YourFacilitatorToken: "test-token",
};

export function filledEnv(): Record<string, string> {
  const env = envFile();
  for (const [name, value] of Object.entries(env)) {
    env[name] = Object.entries(PLACEHOLDERS).reduce(
      (filled, [placeholder, test]) => filled.replace(placeholder, test),
      value,
    );
  }
  return env;
}
