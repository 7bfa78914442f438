/**
 * OPERATOR_CONTACT: how the operator is reached, stated as the OpenAPI document's `info.contact`
 * (docs/agents.md), checked at start.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";

const contact = (value: string) => loadConfig({ OPERATOR_CONTACT: value }).operatorContact;

describe("OPERATOR_CONTACT", () => {
  it("is unset by default", () => {
    expect(loadConfig({}).operatorContact).toBeUndefined();
    expect(contact(" ")).toBeUndefined();
  });

  it("keeps an e-mail address as email and an http(s) URL as url", () => {
    expect(contact("ops@example.com")).toEqual({ email: "ops@example.com" });
    expect(contact("https://example.com/contact")).toEqual({ url: "https://example.com/contact" });
  });

  it.each(["ops", "ops@", "mailto:ops@example.com", "ftp://example.com", "example.com/contact"])(
    "refuses %s with one error naming the variable",
    (value) => {
      let error: unknown;
      try {
        contact(value);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).message).toMatch(
        /^OPERATOR_CONTACT must be an e-mail address or an absolute http\(s\) URL/,
      );
    },
  );
});
