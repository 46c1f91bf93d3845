/**
 * A real WeeChat without a terminal (Debian's /usr/bin/weechat-headless, or BELAY_TEST_WEECHAT), driven as a script
 * or a relay drives it: commands written to its FIFO (WeeChat's fifo plugin: `*<command>` runs in the current
 * buffer, `irc.server.<name> *<command>` in the server's), what it shows read from its logger's per-buffer files,
 * flushed at once. Configured through its own --dir: one server, an IRC listener of Belay's on loopback without TLS,
 * signing in with SASL PLAIN as `account/network@client`. Without weechat-headless the tests skip, except under
 * CI=true, where they fail (SystemBinary).
 *
 * Concurrency rule: one WeeChat process at a time per handle; `start` spawns it, `quit` waits for it to exit, and the
 * scope's close kills whatever still runs (and removes the directory).
 */
import * as Child from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Effect, type Scope } from "effect"
import { eventually } from "./Eventually.js"
import { systemBinary } from "./SystemBinary.js"
import { tempDir } from "./TestDatabase.js"

export const WEECHAT = systemBinary({
  name: "weechat-headless",
  path: "/usr/bin/weechat-headless",
  variable: "BELAY_TEST_WEECHAT",
  install: "apt-get install weechat-headless"
})

export interface WeechatOptions {
  /** Belay's IRC listener on 127.0.0.1. */
  readonly port: number
  /** The SASL PLAIN authentication identity, `account/network@client`. */
  readonly saslUser: string
  readonly password: string
  /** The nick WeeChat asks for (Belay answers with the upstream's). */
  readonly nick: string
}

export interface Weechat {
  /** Starts WeeChat; it connects at once. */
  readonly start: Effect.Effect<void, Error>
  /** Runs a WeeChat command (e.g. `/msg #chan hello`) in the server's buffer, through the FIFO. */
  readonly command: (text: string) => Effect.Effect<void, Error>
  /** `/quit`, then waits until WeeChat has exited. */
  readonly quit: Effect.Effect<void, Error>
  /** The log WeeChat keeps of a channel or query buffer, as written so far ("" before it exists). */
  readonly log: (target: string) => Effect.Effect<string>
  /** The log of the server's buffer and WeeChat's core buffer: what to show when a step fails. */
  readonly diagnostics: Effect.Effect<string>
}

/** WeeChat's name for the server: the middle of its buffers' names (`irc.belay.#chan`). */
const SERVER = "belay"

/**
 * The commands WeeChat runs at start (`-r`, separated by `;`): logs written at once, not every two minutes (the
 * logger's default), the FIFO where `command` writes, and the server (the test's throwaway password in its option).
 */
const startCommands = (options: WeechatOptions, fifo: string): string =>
  [
    "/set logger.file.flush_delay 0",
    "/set logger.file.auto_log on",
    `/set logger.mask.irc "$server/$channel.weechatlog"`,
    `/set fifo.file.path "${fifo}"`,
    // The NAMES reply (353) shown on joining, beside the default topic and count lines, so tests can read who is there.
    `/set irc.look.display_join_message "329,332,333,353,366"`,
    `/server add ${SERVER} 127.0.0.1/${options.port} -nossl`,
    `/set irc.server.${SERVER}.nicks "${options.nick}"`,
    `/set irc.server.${SERVER}.username "${options.nick}"`,
    `/set irc.server.${SERVER}.sasl_mechanism plain`,
    `/set irc.server.${SERVER}.sasl_username "${options.saslUser}"`,
    `/set irc.server.${SERVER}.sasl_password "${options.password}"`,
    `/connect ${SERVER}`
  ].join(";")

/** WeeChat configured for Belay's listener, not yet started; killed with the scope. */
export const weechat = (options: WeechatOptions): Effect.Effect<Weechat, never, Scope.Scope> =>
  Effect.gen(function*() {
    const binary = yield* WEECHAT.require
    const home = yield* tempDir("belay-weechat-")
    const fifo = Path.join(home, "fifo")
    const logs = Path.join(home, "logs")
    let child: Child.ChildProcess | undefined
    const exited = () => child === undefined || child.exitCode !== null || child.signalCode !== null
    yield* Effect.addFinalizer(() => Effect.sync(() => {
      if (!exited()) child?.kill("SIGKILL")
    }))

    const read = (file: string) => Fs.existsSync(file) ? Fs.readFileSync(file, "utf8") : ""
    const start = Effect.gen(function*() {
      if (!exited()) return yield* Effect.fail(new Error("weechat is already running"))
      // A FIFO left by the previous run would be taken for the new one's before it has made its own.
      Fs.rmSync(fifo, { force: true })
      const spawned = Child.spawn(binary, ["--dir", home, "-r", startCommands(options, fifo)], {
        env: { ...process.env, LANG: "C.UTF-8" },
        stdio: "ignore"
      })
      child = spawned
      yield* eventually("weechat's FIFO", Effect.sync(() => Fs.existsSync(fifo) || exited()), (ready) => ready, "15 seconds")
      if (exited()) return yield* Effect.fail(new Error(`weechat exited at start (code ${spawned.exitCode})`))
    })
    const command = (text: string) =>
      Effect.try({
        // The FIFO takes one command per line; a write to a FIFO nobody reads would block, hence the check first.
        try: () => {
          if (exited()) throw new Error("weechat is not running")
          Fs.writeFileSync(fifo, `irc.server.${SERVER} *${text}\n`)
        },
        catch: (error) => error instanceof Error ? error : new Error(String(error))
      })
    return {
      start,
      command,
      quit: Effect.gen(function*() {
        yield* command("/quit leaving")
        yield* eventually("weechat to exit", Effect.sync(exited), (gone) => gone, "15 seconds")
      }),
      log: (target) => Effect.sync(() => read(Path.join(logs, SERVER, `${target.toLowerCase()}.weechatlog`))),
      diagnostics: Effect.sync(() =>
        [`server buffer:\n${read(Path.join(logs, SERVER, `${SERVER}.weechatlog`))}`,
          `core buffer:\n${read(Path.join(logs, "core.weechat.weechatlog"))}`].join("\n")
      )
    } satisfies Weechat
  })
