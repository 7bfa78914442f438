/**
 * The canonical JSON the proofs hash and sign is RFC 8785's: the examples of RFC 8785 §3.2.3
 * and appendix B, byte for byte, and the escapes a report's strings may need.
 */
import { describe, expect, it } from "vitest";
import { canonicalize } from "../../../src/payment/index.js";

describe("canonicalize (RFC 8785)", () => {
  it("writes RFC 8785 §3.2.3's sample as the RFC does", () => {
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],' +
        ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",' +
        ' "literals": [null, true, false]}',
    ) as unknown;
    expect(canonicalize(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it("sorts keys by UTF-16 code units, as RFC 8785 §3.2.3's sorting example", () => {
    const input = {
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis",
    };
    // Read off the text: a parsed object would put the integer-like key "1" first.
    const values = [...canonicalize(input).matchAll(/:"([^"]*)"/g)].map((match) => match[1]);
    expect(values).toEqual([
      "Carriage Return",
      "One",
      "Control",
      "Latin Small Letter O With Diaeresis",
      "Euro Sign",
      "Emoji: Grinning Face",
      "Hebrew Letter Dalet With Dagesh",
    ]);
  });

  it("writes the short escapes for a tab or a newline and no whitespace between tokens", () => {
    expect(canonicalize({ b: ["x\ty", 1.0], a: { d: "\n", c: -0 } })).toBe(
      '{"a":{"c":0,"d":"\\n"},"b":["x\\ty",1]}',
    );
  });
});
