// The docs check: renders a Markdown page as GitHub shows it and measures its tables.
//
// GitHub renders Markdown with cmark-gfm and styles it with the CSS that the npm package
// `github-markdown-css` publishes, in a `.markdown-body` column 980 px wide with 45 px of
// padding (the package's readme states both numbers), which leaves 890 px for content. Its
// CSS makes a table a scrolling block no wider than that column, so a table whose narrowest
// layout is wider than 890 px is cut off, and what lies beyond its right edge is seen only
// by scrolling away from its first column. This script renders the page the same way in
// headless Chromium and reads, for every table, the width its content needs (`scrollWidth`)
// against the width it is given. It fails, naming each table, when a table is wider than the
// column, or when an identifier set as code inside a table is broken across lines.
//
// Usage: node check.mjs --css DIR PAGE.md   (DIR holds github-markdown-light.css;
// tests/docs-render/install.sh puts it there). Needs `cmark-gfm` and `chromium` on PATH.
// Exit 0 when every table fits, 1 when one does not, 2 when the page cannot be rendered.

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

// The stylesheet is pinned by content as well as by version, so a republished file cannot
// change what is measured without this line changing too.
const CSS_FILE = "github-markdown-light.css";
const CSS_SHA256 = "de2d14b5290b8cf2af74c95e92560d9c00642ae72de0b856cece3e4eddb2d885";

// github.com's column, as the package's readme gives it.
const COLUMN_PX = 980;
const PADDING_PX = 45;

function usage(message) {
  console.error(`docs check: ${message}\nusage: node check.mjs --css DIR PAGE.md`);
  process.exit(2);
}

function parseArgs(argv) {
  let css = null;
  let page = null;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--css") {
      css = argv[++i];
    } else if (page === null) {
      page = argv[i];
    } else {
      usage(`unexpected argument \`${argv[i]}\``);
    }
  }
  if (!css) usage("--css DIR is required");
  if (!page) usage("the page to check is required");
  return { css: resolve(css), page: resolve(page) };
}

function readOrFail(path, what) {
  try {
    return readFileSync(path);
  } catch (e) {
    console.error(`docs check: cannot read ${what} ${path}: ${e.message}`);
    process.exit(2);
  }
}

// The measurement runs inside the page once it has been laid out. Its result is written
// into the document, which Chromium's --dump-dom prints.
const MEASURE = `
const column = document.querySelector("article.markdown-body");
const style = getComputedStyle(column);
const content = column.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
const tables = [...column.querySelectorAll("table")].map((table, index) => {
  let heading = null;
  for (let n = table.previousElementSibling; n; n = n.previousElementSibling) {
    if (/^H[1-6]$/.test(n.tagName)) { heading = n.textContent.trim(); break; }
  }
  const header = [...table.querySelectorAll("thead th")].map((th) => th.textContent.trim());
  const broken = [...table.querySelectorAll("code")]
    .filter((code) => code.getClientRects().length > 1)
    .map((code) => code.textContent);
  return { index: index + 1, heading, header, scrollWidth: table.scrollWidth, clientWidth: table.clientWidth, broken };
});
const out = document.createElement("pre");
out.id = "docs-check-result";
out.textContent = JSON.stringify({ column: column.clientWidth, content, tables });
document.body.appendChild(out);
`;

function render(markdown, cssText) {
  const html = execFileSync(
    "cmark-gfm",
    ["--extension", "table", "--extension", "strikethrough", "--extension", "autolink", "--extension", "tagfilter", "--extension", "tasklist"],
    { input: markdown, maxBuffer: 64 << 20 },
  ).toString("utf8");
  return `<!DOCTYPE html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<style>${cssText}</style>
<style>.markdown-body { box-sizing: border-box; min-width: 200px; max-width: ${COLUMN_PX}px; margin: 0 auto; padding: ${PADDING_PX}px; }</style>
</head><body><article class="markdown-body">
${html}
</article><script>${MEASURE}</script></body></html>`;
}

function measure(htmlPath, profile) {
  const flags = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    `--user-data-dir=${profile}`,
    // Wider than the column, so the column is its full 980 px.
    "--window-size=1280,1000",
    "--dump-dom",
    `file://${htmlPath}`,
  ];
  const dom = execFileSync("chromium", flags, { maxBuffer: 64 << 20, stdio: ["ignore", "pipe", "pipe"] }).toString("utf8");
  const match = dom.match(/<pre id="docs-check-result">([^<]*)<\/pre>/);
  if (!match) throw new Error("Chromium's DOM holds no measurement (did the page's script run?)");
  const text = match[1].replaceAll("&quot;", '"').replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&");
  return JSON.parse(text);
}

function describe(t) {
  const where = t.heading ? `under "${t.heading}"` : "before any heading";
  return `table ${t.index} ${where} (${t.header.slice(0, 3).join(" | ")}${t.header.length > 3 ? " | …" : ""})`;
}

const args = parseArgs(process.argv.slice(2));
const css = readOrFail(join(args.css, CSS_FILE), "the stylesheet");
const sha = createHash("sha256").update(css).digest("hex");
if (sha !== CSS_SHA256) {
  console.error(`docs check: ${join(args.css, CSS_FILE)} has sha256 ${sha}, not the pinned ${CSS_SHA256}`);
  process.exit(2);
}
const markdown = readOrFail(args.page, "the page");

const work = mkdtempSync(join(tmpdir(), "checkfu-docs-check-"));
let result;
try {
  const htmlPath = join(work, "page.html");
  writeFileSync(htmlPath, render(markdown, css.toString("utf8")));
  result = measure(htmlPath, join(work, "profile"));
} catch (e) {
  console.error(`docs check: cannot render ${args.page}: ${e.message}`);
  process.exit(2);
} finally {
  rmSync(work, { recursive: true, force: true });
}

if (result.column !== COLUMN_PX) {
  console.error(`docs check: the column rendered ${result.column} px wide, not ${COLUMN_PX} px`);
  process.exit(2);
}
const failures = [];
console.log(`${args.page}: ${result.tables.length} tables, column ${result.column} px (${result.content} px of content)`);
for (const t of result.tables) {
  const fits = t.scrollWidth <= result.content;
  // Rounded, but never to 100% for a table that does not fit.
  const visible = fits ? 100 : Math.min(99, Math.round((100 * result.content) / t.scrollWidth));
  console.log(`  ${fits ? "fits" : "TOO WIDE"}  ${String(t.scrollWidth).padStart(5)} px  ${String(visible).padStart(3)}% visible  ${describe(t)}`);
  if (!fits) failures.push(`${describe(t)} is ${t.scrollWidth} px wide, ${t.scrollWidth - result.content} px more than the ${result.content} px column: ${visible}% visible`);
  for (const code of t.broken) failures.push(`${describe(t)} breaks \`${code}\` across lines`);
}
if (failures.length) {
  console.error(`docs check failed:\n${failures.map((f) => `- ${f}`).join("\n")}`);
  process.exit(1);
}
console.log("docs check passed: every table fits the column");
