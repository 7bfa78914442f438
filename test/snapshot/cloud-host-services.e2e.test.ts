/**
 * The services a cloud provider runs for the machine itself (instance metadata, Azure's
 * WireServer, the EKS Pod Identity agent, their IPv6 and IPv4-mapped forms) are refused in every
 * mode — production, local mode, an allow range of everything — whether named by address, by a
 * name that resolves to them or by a real site's redirect: `secsnap scan` answers what the API
 * answers with a 400, `ssrf`, never suggesting `--local`, and nothing connects to them.
 *
 * Those addresses are real services elsewhere, so they exist here only on the loopback of a
 * network namespace the test makes (test/fixtures/network-namespace.ts), with a canary on each;
 * the scans run inside it (test/fixtures/cloud-host-services.ts).
 */
import { spawn } from "node:child_process";
import { beforeAll, describe, expect, it } from "vitest";
import { SnapshotErrorBodySchema } from "../../src/http/documents/report-schemas.js";
import {
  CLOUD_HOST_SERVICES_CHILD,
  CLOUD_SERVICES,
  MODES,
  type CloudScans,
} from "../fixtures/cloud-host-services.js";
import { NEW_NAMESPACE, networkNamespace } from "../fixtures/network-namespace.js";

const namespace = networkNamespace();

/** Runs the scans in a namespace of their own; their results once it has printed them. */
function scanInNamespace(unshare: string, ip: string): Promise<CloudScans> {
  const child = spawn(
    unshare,
    [...NEW_NAMESPACE, process.execPath, "--import", "tsx", CLOUD_HOST_SERVICES_CHILD, ip],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once("close", (code) => {
      const line = stdout.split("\n").find((l) => l.startsWith("RESULT "));
      if (code === 0 && line) resolve(JSON.parse(line.slice("RESULT ".length)) as CloudScans);
      else reject(new Error(`the namespace's scans ended with ${code}: ${stderr}`));
    });
  });
}

describe.skipIf(!namespace)("cloud host services, on a namespace's loopback", () => {
  let results: CloudScans;
  beforeAll(async () => {
    results = await scanInNamespace(namespace!.unshare, namespace!.ip);
  }, 180_000);

  it("a connection made there reaches each service's canary (the canaries can see a scan)", () => {
    expect(results.control).toEqual(
      Object.fromEntries(CLOUD_SERVICES.map((s) => [s.address, true])),
    );
  });

  it.each(Object.keys(MODES))(
    "%s: every way to every service is ssrf, without the --local hint, and connects nowhere",
    (mode) => {
      const scans = results.scans.filter((s) => s.mode === mode);
      expect(scans).toHaveLength(CLOUD_SERVICES.length * 4);
      const outcomes = scans.map((scan) => {
        const body = SnapshotErrorBodySchema.safeParse(JSON.parse(scan.stdout));
        return {
          url: scan.url,
          code: scan.code,
          error_type: body.data?.error_type,
          local_hint: body.data?.error.includes("--local"),
          connections: scan.connections,
        };
      });
      const refused = { code: 2, error_type: "ssrf", local_hint: false, connections: 0 };
      expect(outcomes).toEqual(scans.map((scan) => ({ url: scan.url, ...refused })));
    },
  );
});
