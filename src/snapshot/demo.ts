/**
 * The fixed demo of SERVICE.md §4.2: a pre-made report of a sample site, never a live fetch.
 * Its notes come from the same table as live reports, so the wording cannot drift.
 */
import { headerPresenceFields } from "./checks/headers.js";
import { missingHeaderNotes, renderNotes } from "./notes.js";
import { checksOf } from "./result.js";
import type { DemoSnapshotResult } from "./result.js";

export const DEMO_NOTE =
  "This is a static example report; no site was fetched. The live operation is the paid POST /v1/snapshot (0.05 USDC via x402).";

const headers = {
  hsts: false,
  csp: false,
  x_frame_options: false,
  x_content_type_options: false,
  referrer_policy: true,
  permissions_policy: true,
};

const FIELDS = {
  requested_url: "https://example.com",
  normalized_url: "https://example.com/",
  final_url: "https://example.com/",
  fetched_at: "2026-01-01T00:00:00.000Z",
  reachable: true,
  final_status_code: 200,
  redirect_count: 0,
  https_ok: true,
  ...headerPresenceFields(headers),
  security_txt_present: true,
  robots_txt_present: true,
  sitemap_xml_present: true,
  notes: renderNotes(missingHeaderNotes(headers)),
};

const DEMO: DemoSnapshotResult = {
  ...FIELDS,
  checks: checksOf(FIELDS),
  _demo: true,
  _note: DEMO_NOTE,
};

/** A fresh copy each call, so no caller can change what the next one sees. */
export function demoSnapshot(): DemoSnapshotResult {
  return structuredClone(DEMO);
}
