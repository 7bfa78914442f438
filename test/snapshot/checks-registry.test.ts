/**
 * The checks registry and the report schema are written separately (the schema stays explicit
 * for the OpenAPI document); these tests keep them in step.
 */
import { describe, expect, it } from "vitest";
import { SnapshotResultSchema } from "../../src/http/documents/report-schemas.js";
import { CHECKS, CHECK_NAMES } from "../../src/snapshot/index.js";

const shape = SnapshotResultSchema.shape;

describe("checks registry", () => {
  it("names the keys of `checks`, in the schema's order", () => {
    expect(Object.keys(shape.checks.shape)).toEqual([...CHECK_NAMES]);
    expect(CHECK_NAMES).toEqual(CHECKS.map((c) => c.name));
  });

  it("names the report's check fields, in order, between the facts and the notes", () => {
    expect(Object.keys(shape)).toEqual([
      "requested_url",
      "normalized_url",
      "final_url",
      "fetched_at",
      "reachable",
      "final_status_code",
      "redirect_count",
      ...CHECKS.map((c) => c.field),
      "notes",
      "checks",
      "findings",
      "score",
      "grade",
      // docs/contract.md §9: the sections rules add, after the grade.
      "tls",
      "dns",
      "cross_origin",
      "x402",
      // docs/contract.md §10: a paid report's proof, last.
      "proof",
    ]);
  });

  it("gives a check and its field the same type: only well-known files can be null", () => {
    for (const c of CHECKS) {
      const entry = shape.checks.shape[c.name];
      const field = shape[c.field];
      for (const value of [true, false, null, "yes"]) {
        expect(field.safeParse(value).success, `${c.field} ${String(value)}`).toBe(
          entry.safeParse(value).success,
        );
      }
      expect(entry.safeParse(null).success, c.name).toBe(c.kind === "file");
    }
  });

  it("gives every check a label, every header a lower-case name and a note", () => {
    for (const c of CHECKS) {
      expect(c.label.trim(), c.name).not.toBe("");
      if (c.kind === "header") {
        expect(c.header).toBe(c.header.toLowerCase());
        expect(c.missing.message).toMatch(/header is missing\.$/);
      }
    }
    expect(new Set(CHECKS.map((c) => c.field)).size).toBe(CHECKS.length);
  });
});
