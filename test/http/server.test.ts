import { connect } from "node:net";
import { expect, it } from "vitest";
import type { SnapshotResult } from "../../src/snapshot/result.js";
import { ScriptedEngine, sampleResult, serveApp } from "./helpers.js";

/** An engine whose snapshots wait until the test releases them; `started` tells when one began. */
function gatedEngine() {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let markStarted!: () => void;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  const engine = new ScriptedEngine(async (raw): Promise<SnapshotResult> => {
    markStarted();
    await gate;
    return sampleResult(raw);
  });
  return { engine, release, started };
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.on("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
  });
}

const post = (url: string) =>
  fetch(`${url}/v1/snapshot`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ url: "https://example.com/" }),
  });

it("close() stops accepting at once but lets the running request finish", async () => {
  const { engine, release, started } = gatedEngine();
  const served = await serveApp({ engine });
  const inFlight = post(served.url);
  await started;

  const closed = served.close(60_000);
  expect(await canConnect(served.port)).toBe(false);

  release();
  const res = await inFlight;
  expect(res.status).toBe(200);
  expect(await res.json()).toMatchObject({ requested_url: "https://example.com/" });
  await closed; // resolves once the last connection is gone, long before the 60 s bound
});

it("close() cuts requests that outlive the grace period", async () => {
  const { engine, started } = gatedEngine(); // never released
  const served = await serveApp({ engine });
  const inFlight = post(served.url).then(
    (res) => `status ${res.status}`,
    () => "connection cut",
  );
  await started;
  await served.close(50);
  expect(await inFlight).toBe("connection cut");
});
