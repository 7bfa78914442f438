/** robots.txt (docs/contract.md §4.5): the check of `robots_txt` and its note. */
import type { FileProbe } from "../types.js";
import type { FileVerdict } from "./evidence.js";
import { defineRule } from "./rule.js";
import { fileNotes, fileVerdict, isHtml, lines } from "./well-known.js";

export const ROBOTS_TXT_PATH = "/robots.txt";

const RULE_LINE = /^\s*(user-agent|allow|disallow|sitemap)\s*:/i;

/** 200, not HTML, and empty or with at least one user-agent/allow/disallow/sitemap line. */
function robotsContentOk(text: string, contentType: string | undefined): boolean {
  if (isHtml(text, contentType)) return false;
  if (text.trim() === "") return true;
  return lines(text).some((line) => RULE_LINE.test(line));
}

export function checkRobotsTxt(probe: FileProbe): FileVerdict {
  return fileVerdict(probe, robotsContentOk);
}

export const robotsTxtRule = defineRule({
  topic: "robots_txt",
  check: {
    kind: "file",
    name: "robots_txt",
    field: "robots_txt_present",
    fileName: "robots.txt",
    label: "robots.txt",
  },
  // Not a security finding: its verdict stays a note.
  findings: [],
  notes: (e) => fileNotes(e.files?.robots_txt, "robots.txt"),
});
