/**
 * A real irssi (Debian's /usr/bin/irssi, or BELAY_TEST_IRSSI) in a tmux server of its own (Debian's /usr/bin/tmux,
 * or BELAY_TEST_TMUX), driven as a person drives it: keys typed with `tmux send-keys`, what it shows read from its
 * per-channel log files (irssi's autolog) and its pane. Configured through its own --home directory: one server, an
 * IRC listener of Belay's on loopback without TLS, signing in with SASL PLAIN as `account/network@client`. Without
 * irssi or tmux the tests skip, except under CI=true, where they fail (SystemBinary).
 *
 * Concurrency rule: every command runs tmux to completion before the next; irssi itself runs in the tmux server,
 * which the scope's close kills (with the directory).
 */
import * as Child from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Effect, type Scope } from "effect"
import { eventually } from "./Eventually.js"
import { systemBinary } from "./SystemBinary.js"
import { tempDir } from "./TestDatabase.js"

export const IRSSI = systemBinary({
  name: "irssi",
  path: "/usr/bin/irssi",
  variable: "BELAY_TEST_IRSSI",
  install: "apt-get install irssi"
})
export const TMUX = systemBinary({
  name: "tmux",
  path: "/usr/bin/tmux",
  variable: "BELAY_TEST_TMUX",
  install: "apt-get install tmux"
})

export interface IrssiOptions {
  /** Belay's IRC listener on 127.0.0.1. */
  readonly port: number
  /** The SASL PLAIN authentication identity, `account/network@client`. */
  readonly saslUser: string
  readonly password: string
  /** The nick irssi asks for (Belay answers with the upstream's). */
  readonly nick: string
}

export interface Irssi {
  /** Starts irssi in the tmux server; it connects at once (autoconnect). */
  readonly start: Effect.Effect<void, Error>
  /** Types `text` (literally) and Enter, in the current window. */
  readonly type: (text: string) => Effect.Effect<void, Error>
  /** `/quit`, then waits until irssi has exited. */
  readonly quit: Effect.Effect<void, Error>
  /** The log irssi keeps of a channel or query window, as written so far ("" before it exists). */
  readonly log: (target: string) => Effect.Effect<string>
  /** What the pane shows now. */
  readonly screen: Effect.Effect<string>
}

/** The tag irssi gives the connection: its chat network's name, the directory of its logs. */
const CHATNET = "belay"
const SESSION = "irssi"

const quoted = (s: string) => `"${s.replace(/\\/g, "\\\\").replace(/"/g, "\\\"")}"`

const config = (options: IrssiOptions, logs: string) => `servers = (
  {
    address = "127.0.0.1";
    chatnet = ${quoted(CHATNET)};
    port = ${quoted(String(options.port))};
    use_tls = "no";
    autoconnect = "yes";
  }
);
chatnets = {
  ${CHATNET} = {
    type = "IRC";
    nick = ${quoted(options.nick)};
    sasl_mechanism = "PLAIN";
    sasl_username = ${quoted(options.saslUser)};
    sasl_password = ${quoted(options.password)};
  };
};
settings = {
  core = {
    real_name = "Belay system test";
    user_name = ${quoted(options.nick)};
    nick = ${quoted(options.nick)};
    settings_autosave = "no";
  };
  "fe-common/core" = {
    autolog = "yes";
    autolog_path = ${quoted(`${logs}/$tag/$0.log`)};
    autolog_level = "all -crap -clientcrap -ctcps";
  };
};
`

const run = (binary: string, args: ReadonlyArray<string>) =>
  Effect.async<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resume) => {
    Child.execFile(binary, [...args], { env: { ...process.env, LANG: "C.UTF-8" } }, (error, stdout, stderr) => {
      resume(Effect.succeed({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr }))
    })
  })

/** irssi configured for Belay's listener, not yet started; its tmux server is killed with the scope. */
export const irssi = (options: IrssiOptions): Effect.Effect<Irssi, never, Scope.Scope> =>
  Effect.gen(function*() {
    const binary = yield* IRSSI.require
    const tmuxBinary = yield* TMUX.require
    const home = yield* tempDir("belay-irssi-")
    const logs = Path.join(home, "logs")
    Fs.writeFileSync(Path.join(home, "config"), config(options, logs))
    const socket = Path.join(home, "tmux.sock")
    const tmux = (...args: ReadonlyArray<string>) =>
      Effect.flatMap(run(tmuxBinary, ["-S", socket, "-f", "/dev/null", ...args]), (result) =>
        result.code === 0 ? Effect.succeed(result.stdout) : Effect.fail(new Error(`tmux ${args[0]}: ${result.stderr.trim()}`)))
    yield* Effect.addFinalizer(() => Effect.ignore(tmux("kill-server")))

    const running = Effect.map(Effect.either(tmux("has-session", "-t", SESSION)), (r) => r._tag === "Right")
    const screen = Effect.orElseSucceed(tmux("capture-pane", "-p", "-t", SESSION), () => "(no pane)")
    return {
      start: Effect.asVoid(tmux("new-session", "-d", "-s", SESSION, "-x", "200", "-y", "50", `${binary} --home=${home}`)),
      type: (text) =>
        Effect.zipRight(tmux("send-keys", "-t", SESSION, "-l", text), Effect.asVoid(tmux("send-keys", "-t", SESSION, "Enter"))),
      quit: Effect.gen(function*() {
        yield* tmux("send-keys", "-t", SESSION, "-l", "/quit leaving")
        yield* tmux("send-keys", "-t", SESSION, "Enter")
        yield* eventually("irssi to exit", running, (r) => !r, "15 seconds")
      }),
      log: (target) =>
        Effect.sync(() => {
          const file = Path.join(logs, CHATNET, `${target.toLowerCase()}.log`)
          return Fs.existsSync(file) ? Fs.readFileSync(file, "utf8") : ""
        }),
      screen
    } satisfies Irssi
  })
