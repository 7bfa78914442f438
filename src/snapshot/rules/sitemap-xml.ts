/** sitemap.xml (docs/contract.md §4.5): the check of `sitemap_xml` and its note. */
import type { FileProbe } from "../types.js";
import type { FileVerdict } from "./evidence.js";
import { defineRule } from "./rule.js";
import { fileNotes, fileVerdict } from "./well-known.js";

export const SITEMAP_XML_PATH = "/sitemap.xml";

/** 200 whose (decoded, gunzipped) body contains `<urlset` or `<sitemapindex`. */
function sitemapContentOk(text: string): boolean {
  return text.includes("<urlset") || text.includes("<sitemapindex");
}

export function checkSitemapXml(probe: FileProbe): FileVerdict {
  return fileVerdict(probe, sitemapContentOk);
}

export const sitemapXmlRule = defineRule({
  topic: "sitemap_xml",
  check: {
    kind: "file",
    name: "sitemap_xml",
    field: "sitemap_xml_present",
    fileName: "sitemap.xml",
    label: "sitemap.xml",
  },
  // Not a security finding: its verdict stays a note.
  findings: [],
  notes: (e) => fileNotes(e.files?.sitemap_xml, "sitemap.xml"),
});
