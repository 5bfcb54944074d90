// Tokenize rev files with VS Code's TextMate engine (vscode-textmate and
// vscode-oniguruma, installed with vscode-tmgrammar-test in editors/vscode).
// Usage: node tokenize.js NODE_MODULES GRAMMAR FILE...
// Prints one JSON object: {FILE: [[line, start, end, innermost scope], ...]}, with
// 0-based lines and [start, end) in UTF-16 code units (characters of the BMP).
const fs = require("fs");
const path = require("path");
const [modulesArg, grammarPath, ...files] = process.argv.slice(2);
const modules = path.resolve(modulesArg);
const textmate = require(path.join(modules, "vscode-textmate"));
const oniguruma = require(path.join(modules, "vscode-oniguruma"));

const wasm = fs.readFileSync(path.join(modules, "vscode-oniguruma", "release", "onig.wasm"));
const onigLib = oniguruma.loadWASM(wasm.buffer).then(() => ({
  createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
  createOnigString: (text) => new oniguruma.OnigString(text),
}));
const registry = new textmate.Registry({
  onigLib,
  loadGrammar: async () =>
    textmate.parseRawGrammar(fs.readFileSync(grammarPath, "utf8"), grammarPath),
});

registry.loadGrammar("source.rev").then((grammar) => {
  const result = {};
  for (const file of files) {
    const tokens = [];
    let state = textmate.INITIAL;
    fs.readFileSync(file, "utf8").split("\n").forEach((line, index) => {
      const done = grammar.tokenizeLine(line, state);
      for (const token of done.tokens) {
        const scope = token.scopes[token.scopes.length - 1];
        tokens.push([index, token.startIndex, Math.min(token.endIndex, line.length), scope]);
      }
      state = done.ruleStack;
    });
    result[file] = tokens;
  }
  process.stdout.write(JSON.stringify(result));
});
