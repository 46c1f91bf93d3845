/**
 * The `belay` command. `belay serve` runs the server in this process; every other
 * command is a client of the running server's admin socket (docs/decisions/operations.md). Arguments are checked here for a friendly one-line error, and checked
 * again by the server against the same Schema (src/schema/Admin.ts).
 *
 * Exit codes: 0 success, 1 the server refused the command (or none is running),
 * 2 bad usage. `--json` prints machine-readable output on stdout.
 *
 * `belay serve` stops on SIGTERM or SIGINT (docs/decisions/several-nodes.md "Shutdown"): requests in
 * flight finish, every network QUITs, the history is flushed, and the process exits 0
 * within SHUTDOWN_DEADLINE — or 1 if that ran out. A second signal exits at once with
 * 128 + the signal's number, as a shell reports a process killed by it.
 */
import * as Net from "node:net"
import * as Path from "node:path"
// The module, not the package's index: in the server bundle the index evaluates every module it re-exports, the
// cluster's HTTP client (undici) among them (docs/architecture.md "Memory").
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Either, Schema } from "effect"
import { AdminNetwork, type AdminRequest, AdminResponse } from "../schema/Admin.js"
import { parseFishKey } from "../services/crypto/Fish.js"
import { limitsRequest, showLines } from "./AccountLimitsCommand.js"

class UsageError extends Error {}

const USAGE = `usage:
  belay serve
  belay account add NAME              (password on stdin)
  belay account list
  belay account pause NAME
  belay account resume NAME
  belay account recover NAME          (new password on stdin; revokes every OAuth app)
  belay account limits NAME [--networks N] [--channels N] [--apps N] [--push-subscriptions N]
        [--passkeys N] [--sessions N] [--uploads MIB]  (N: a number, unlimited or default)
  belay account show NAME             (its limits, where each comes from, and what it holds)
  belay account delete NAME [--yes]   (irreversible: asks for confirmation unless --yes)
  belay account export NAME > FILE    (the member's data as JSON Lines; no secrets)
  belay network add ACCOUNT --name N --host H --port P [--tls] [--tls-insecure] [--nick NICK]
        [--username U] [--realname R] [--server-password P] [--sasl-plain USER:PASS] [--join '#a,#b']
  belay network list ACCOUNT          (state, current nick, next retry, last error)
  belay network remove ACCOUNT ID
  belay token add ACCOUNT --name N --scope read|read-write
  belay token list ACCOUNT
  belay token revoke ACCOUNT NAME
  belay channel encrypt ACCOUNT NETWORK_ID TARGET   (FiSH key on stdin)
  belay channel decrypt ACCOUNT NETWORK_ID TARGET
options: --json  machine-readable output`

interface Parsed {
  readonly positional: ReadonlyArray<string>
  readonly flags: ReadonlyMap<string, string | true>
}

const BOOLEAN_FLAGS = new Set(["tls", "tls-insecure", "json", "help", "yes"])

const parseArgs = (argv: ReadonlyArray<string>): Parsed => {
  const positional: Array<string> = []
  const flags = new Map<string, string | true>()
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg.startsWith("--")) {
      const eq = arg.indexOf("=")
      const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq)
      if (BOOLEAN_FLAGS.has(name)) {
        if (eq !== -1) throw new UsageError(`--${name} takes no value`)
        flags.set(name, true)
      } else if (eq !== -1) {
        flags.set(name, arg.slice(eq + 1))
      } else {
        const value = argv[++i]
        if (value === undefined) throw new UsageError(`--${name} needs a value`)
        flags.set(name, value)
      }
    } else {
      positional.push(arg)
    }
  }
  return { positional, flags }
}

const readStdinSecret = (what: string): Promise<string> =>
  new Promise((resolve, reject) => {
    if (process.stdin.isTTY) process.stderr.write(`${what}: `)
    const chunks: Array<Buffer> = []
    process.stdin.on("data", (c: Buffer) => {
      chunks.push(c)
      // On a terminal, one line is the answer.
      if (process.stdin.isTTY && c.includes(10)) process.stdin.pause(), process.stdin.emit("end")
    })
    process.stdin.once("end", () => {
      // Exactly one trailing newline is removed (docs/decisions/operations.md), so a secret may end in spaces.
      const text = Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "")
      text === "" ? reject(new UsageError(`${what} is empty: pass it on stdin`)) : resolve(text)
    })
    process.stdin.once("error", reject)
  })

/**
 * Deleting an account cannot be undone (docs/contract.md "Admin commands"): without `--yes` the operator types the
 * account's name on a terminal; a script without a terminal must say `--yes`.
 */
const confirmDeletion = (name: string): Promise<void> =>
  new Promise((resolve, reject) => {
    if (!process.stdin.isTTY) {
      return reject(new UsageError(`deleting ${name} cannot be undone: pass --yes to confirm (stdin is not a terminal)`))
    }
    process.stderr.write(`Delete account ${name} and everything it owns? This cannot be undone.\nType its name to confirm: `)
    process.stdin.setEncoding("utf8")
    process.stdin.once("data", (answer: string) => {
      process.stdin.pause()
      answer.trim() === name ? resolve() : reject(new UsageError("not confirmed; nothing was deleted"))
    })
  })

const positiveInt = (value: string | undefined, what: string): number => {
  if (value === undefined || !/^\d+$/.test(value) || Number(value) < 1) {
    throw new UsageError(`${what} must be a positive integer, got ${JSON.stringify(value ?? "")}`)
  }
  return Number(value)
}

const flag = (p: Parsed, name: string): string | undefined => {
  const v = p.flags.get(name)
  return typeof v === "string" ? v : undefined
}

const requireFlag = (p: Parsed, name: string): string => {
  const v = flag(p, name)
  if (v === undefined || v === "") throw new UsageError(`--${name} is required`)
  return v
}

const arity = (p: Parsed, n: number, shape: string) => {
  if (p.positional.length !== n) throw new UsageError(`usage: belay ${shape}`)
}

/** Turns argv into an admin request, reading secrets from stdin where the command takes one. */
const toRequest = async (p: Parsed): Promise<AdminRequest> => {
  const [group, verb] = p.positional
  const arg = (i: number) => p.positional[i]!
  switch (`${group} ${verb}`) {
    case "account add":
      arity(p, 3, "account add NAME")
      return { _tag: "AccountAdd", name: arg(2), password: await readStdinSecret("password") }
    case "account list":
      arity(p, 2, "account list")
      return { _tag: "AccountList" }
    case "account pause":
      arity(p, 3, "account pause NAME")
      return { _tag: "AccountPause", name: arg(2) }
    case "account resume":
      arity(p, 3, "account resume NAME")
      return { _tag: "AccountResume", name: arg(2) }
    case "account delete":
      arity(p, 3, "account delete NAME [--yes]")
      if (!p.flags.has("yes")) await confirmDeletion(arg(2))
      return { _tag: "AccountDelete", name: arg(2) }
    case "account export":
      arity(p, 3, "account export NAME > FILE")
      return { _tag: "AccountExport", name: arg(2) }
    case "account limits": {
      arity(p, 3, "account limits NAME [--networks N] [--channels N] [--apps N] [--push-subscriptions N] …")
      const built = limitsRequest(arg(2), p.flags)
      if ("usage" in built) throw new UsageError(built.usage)
      return built.request
    }
    case "account show":
      arity(p, 3, "account show NAME")
      return { _tag: "AccountShow", name: arg(2) }
    case "account recover":
      arity(p, 3, "account recover NAME")
      return { _tag: "AccountRecover", name: arg(2), password: await readStdinSecret("new password") }
    case "network add": {
      arity(p, 3, "network add ACCOUNT --name N --host H --port P …")
      const port = Number(requireFlag(p, "port"))
      if (!/^\d+$/.test(requireFlag(p, "port")) || port < 1 || port > 65535) {
        throw new UsageError(`--port must be a port number between 1 and 65535, got ${JSON.stringify(flag(p, "port"))}`)
      }
      const sasl = flag(p, "sasl-plain")
      let saslPlain: { username: string; password: string } | undefined
      if (sasl !== undefined) {
        const colon = sasl.indexOf(":")
        if (colon < 1 || colon === sasl.length - 1) throw new UsageError("--sasl-plain must be USER:PASS")
        saslPlain = { username: sasl.slice(0, colon), password: sasl.slice(colon + 1) }
      }
      const optional = <K extends string>(key: K, value: string | undefined) =>
        (value === undefined ? {} : { [key]: value }) as Partial<Record<K, string>>
      return {
        _tag: "NetworkAdd",
        account: arg(2),
        name: requireFlag(p, "name"),
        host: requireFlag(p, "host"),
        port,
        tls: p.flags.has("tls") || p.flags.has("tls-insecure"),
        tlsInsecure: p.flags.has("tls-insecure"),
        ...optional("nick", flag(p, "nick")),
        ...optional("username", flag(p, "username")),
        ...optional("realname", flag(p, "realname")),
        ...optional("serverPassword", flag(p, "server-password")),
        ...(saslPlain ? { saslPlain } : {}),
        join: (flag(p, "join") ?? "").split(",").map((c) => c.trim()).filter((c) => c !== "")
      }
    }
    case "network list":
      arity(p, 3, "network list ACCOUNT")
      return { _tag: "NetworkList", account: arg(2) }
    case "network remove":
      arity(p, 4, "network remove ACCOUNT ID")
      return { _tag: "NetworkRemove", account: arg(2), id: positiveInt(arg(3), "ID") }
    case "token add": {
      arity(p, 3, "token add ACCOUNT --name N --scope read|read-write")
      const scope = requireFlag(p, "scope")
      if (scope !== "read" && scope !== "read-write") {
        throw new UsageError(`--scope must be read or read-write, got ${JSON.stringify(scope)}`)
      }
      return { _tag: "TokenAdd", account: arg(2), name: requireFlag(p, "name"), scope }
    }
    case "token list":
      arity(p, 3, "token list ACCOUNT")
      return { _tag: "TokenList", account: arg(2) }
    case "token revoke":
      arity(p, 4, "token revoke ACCOUNT NAME")
      return { _tag: "TokenRevoke", account: arg(2), name: arg(3) }
    case "channel encrypt": {
      arity(p, 5, "channel encrypt ACCOUNT NETWORK_ID TARGET")
      const networkId = positiveInt(arg(3), "NETWORK_ID")
      const key = await readStdinSecret("key")
      // Checked again by the server (E2eKeys.set); here for the one-line usage error and exit code 2.
      const parsed = parseFishKey(key)
      if (Either.isLeft(parsed)) throw new UsageError(`${parsed.left.message}; give [cbc:|ecb:]KEY on stdin`)
      return { _tag: "ChannelEncrypt", account: arg(2), networkId, target: arg(4), key }
    }
    case "channel decrypt":
      arity(p, 5, "channel decrypt ACCOUNT NETWORK_ID TARGET")
      return { _tag: "ChannelDecrypt", account: arg(2), networkId: positiveInt(arg(3), "NETWORK_ID"), target: arg(4) }
    default:
      throw new UsageError(`unknown command ${JSON.stringify(p.positional.join(" "))}\n${USAGE}`)
  }
}

const adminSocketPath = (): string =>
  process.env.BELAY_ADMIN_SOCKET || Path.join(Path.resolve(process.env.BELAY_DATA_DIR || "./data"), "belay.sock")

const call = (socketPath: string, request: AdminRequest): Promise<AdminResponse> =>
  new Promise((resolve, reject) => {
    const socket = Net.connect(socketPath)
    let data = ""
    socket.setEncoding("utf8")
    socket.once("connect", () => socket.write(JSON.stringify(request) + "\n"))
    socket.on("data", (c: string) => (data += c))
    socket.once("end", () => {
      try {
        resolve(Schema.decodeUnknownSync(Schema.parseJson(AdminResponse))(data.trim()))
      } catch {
        reject(new Error("the server sent an unreadable response"))
      }
    })
    socket.once("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "ENOENT" || e.code === "ECONNREFUSED") {
        reject(new Error(`no belay server is running (no admin socket at ${socketPath}); start one with 'belay serve'`))
      } else reject(e)
    })
  })

/**
 * `account export`: the head line is an AdminResponse; on success the archive follows, copied to stdout at the pace
 * stdout takes it (pipe: the socket is paused while stdout is full). Resolves with the refusal, or with whether the
 * archive arrived whole (its last line is the `end` line).
 */
/** Bytes of the archive's end kept to find its last line (the `end` line is far shorter). */
const TAIL_BYTES = 4096

const callExport = (socketPath: string, request: AdminRequest): Promise<AdminResponse | { readonly whole: boolean }> =>
  new Promise((resolve, reject) => {
    const socket = Net.connect(socketPath)
    // The head line, as bytes until its line break: the chunk that ends it also starts the archive, which must reach
    // stdout byte for byte (a character cut at the chunk's end would not survive a decode and re-encode).
    let headBytes = Buffer.alloc(0)
    /** The archive's last bytes, for its `end` line: kept as bytes, decoded once at the end (not every chunk). */
    let tailBytes = Buffer.alloc(0)
    const keepTail = (chunk: Buffer) => {
      tailBytes = chunk.length >= TAIL_BYTES
        ? Buffer.from(chunk.subarray(chunk.length - TAIL_BYTES))
        : Buffer.concat([tailBytes, chunk]).subarray(-TAIL_BYTES)
    }
    let streaming = false
    socket.once("connect", () => socket.write(JSON.stringify(request) + "\n"))
    const onData = (chunk: Buffer) => {
      if (streaming) return keepTail(chunk)
      headBytes = Buffer.concat([headBytes, chunk])
      const nl = headBytes.indexOf(10)
      if (nl === -1) return
      const head = Schema.decodeUnknownEither(Schema.parseJson(AdminResponse))(headBytes.subarray(0, nl).toString("utf8"))
      if (Either.isLeft(head)) return reject(new Error("the server sent an unreadable response"))
      if (!head.right.ok) return resolve(head.right)
      streaming = true
      const rest = headBytes.subarray(nl + 1)
      keepTail(rest)
      process.stdout.write(rest)
      socket.pipe(process.stdout, { end: false })
    }
    socket.on("data", onData)
    socket.once("end", () => {
      if (!streaming) return reject(new Error("the server sent an unreadable response"))
      const last = tailBytes.toString("utf8").trimEnd().split("\n").pop() ?? ""
      resolve({ whole: last.startsWith(`{"kind":"end"`) })
    })
    socket.once("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "ENOENT" || e.code === "ECONNREFUSED") {
        reject(new Error(`no belay server is running (no admin socket at ${socketPath}); start one with 'belay serve'`))
      } else if (streaming) resolve({ whole: false })
      else reject(e)
    })
  })

/** Seconds from now until `iso`, for a human reading `network list`. */
const fromNow = (iso: string): string => {
  const seconds = Math.round((Date.parse(iso) - Date.now()) / 1000)
  return seconds <= 0 ? "due now" : `in ${seconds} s`
}

/**
 * One network per line, tab-separated: id, name, server, state, current nick ("-" when not registered), the next
 * retry while in backoff, and the last error last (it may hold spaces): why a network is down, without the logs.
 */
const networkLine = (n: AdminNetwork): string =>
  [
    n.id,
    n.name,
    `${n.host}:${n.port}${n.tls ? " (tls)" : ""}`,
    n.enabled || n.state !== "offline" ? n.state : "offline (disconnected)",
    n.currentNick ?? "-",
    n.nextRetryAt === null ? "-" : `retry ${fromNow(n.nextRetryAt)} (${n.nextRetryAt})`,
    n.lastError === null ? "-" : `last error: ${n.lastError}`
  ].join("\t")

// What the human form reads of each answer, decoded as NetworkList's is (a server of another build cannot crash it).
const AccountRows = Schema.Array(Schema.Struct({ name: Schema.String, status: Schema.String }))
const TokenRows = Schema.Array(Schema.Struct({ name: Schema.String, scope: Schema.String, revoked: Schema.Boolean, createdAt: Schema.String }))
const StatusAnswer = Schema.Struct({ status: Schema.String })
const RecoverAnswer = Schema.Struct({ revokedApps: Schema.Number })
const IdAnswer = Schema.Struct({ id: Schema.Number })
const TokenAnswer = Schema.Struct({ token: Schema.String })

const printHuman = (request: AdminRequest, result: unknown): string => {
  switch (request._tag) {
    case "AccountAdd":
      return `account ${request.name} created`
    case "AccountList":
      return Schema.decodeUnknownSync(AccountRows)(result).map((a) => `${a.name}\t${a.status}`).join("\n")
    case "AccountPause":
    case "AccountResume":
      return `account ${request.name} is ${Schema.decodeUnknownSync(StatusAnswer)(result).status}`
    case "AccountRecover":
      return `password of ${request.name} reset; ${Schema.decodeUnknownSync(RecoverAnswer)(result).revokedApps} app token(s) revoked`
    case "AccountLimits":
    case "AccountShow":
      return showLines(result)
    case "AccountDelete":
      return `account ${request.name} is being deleted: it can no longer sign in, its networks quit; its name is free once all its data is gone`
    case "AccountExport":
      return ""
    case "NetworkAdd":
      return String(Schema.decodeUnknownSync(IdAnswer)(result).id)
    case "NetworkList":
      return Schema.decodeUnknownSync(Schema.Array(AdminNetwork))(result).map(networkLine).join("\n")
    case "NetworkRemove":
      return `network ${request.id} removed`
    case "TokenAdd":
      return Schema.decodeUnknownSync(TokenAnswer)(result).token
    case "TokenList":
      return Schema.decodeUnknownSync(TokenRows)(result)
        .map((t) => `${t.name}\t${t.scope}\t${t.createdAt}${t.revoked ? "\trevoked" : ""}`)
        .join("\n")
    case "TokenRevoke":
      return `token ${request.name} revoked`
    case "ChannelEncrypt":
      return `${request.target} on network ${request.networkId} is now end-to-end encrypted`
    case "ChannelDecrypt":
      return `${request.target} on network ${request.networkId} is no longer encrypted`
  }
}

const runClient = async (argv: ReadonlyArray<string>): Promise<number> => {
  let parsed: Parsed
  let request: AdminRequest
  const asJson = argv.includes("--json")
  try {
    parsed = parseArgs(argv)
    if (parsed.flags.has("help") || parsed.positional.length === 0) {
      process.stdout.write(USAGE + "\n")
      return parsed.flags.has("help") ? 0 : 2
    }
    request = await toRequest(parsed)
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`belay: ${e.message}\n`)
      return 2
    }
    throw e
  }
  if (request._tag === "AccountExport") {
    try {
      const outcome = await callExport(adminSocketPath(), request)
      if ("whole" in outcome) {
        if (outcome.whole) return 0
        process.stderr.write("belay: the export was cut short (see the server log); the file is incomplete\n")
        return 1
      }
      if (!outcome.ok) process.stderr.write(`belay: ${outcome.error}\n`)
      return 1
    } catch (e) {
      process.stderr.write(`belay: ${e instanceof Error ? e.message : String(e)}\n`)
      return 1
    }
  }
  try {
    const response = await call(adminSocketPath(), request)
    if (!response.ok) {
      if (asJson) process.stdout.write(JSON.stringify({ ok: false, error: response.error }) + "\n")
      process.stderr.write(`belay: ${response.error}\n`)
      return 1
    }
    const out = asJson ? JSON.stringify(response.result) : printHuman(request, response.result)
    if (out !== "") process.stdout.write(out + "\n")
    return 0
  } catch (e) {
    process.stderr.write(`belay: ${e instanceof Error ? e.message : String(e)}\n`)
    return 1
  }
}

/** From the first SIGTERM/SIGINT to the process's exit, whatever is still running. */
const SHUTDOWN_DEADLINE_MS = 5_000
const SIGNAL_NUMBERS: Readonly<Record<string, number>> = { SIGINT: 2, SIGTERM: 15 }

/**
 * The graceful shutdown itself is runMain's (it interrupts the server on the first signal, and the layers close in
 * order); this adds its two bounds: a deadline after the first signal, and an immediate exit on the second (an
 * operator who asks twice wants it gone now).
 */
const boundShutdown = () => {
  let signalled = false
  const onSignal = (signal: NodeJS.Signals) => {
    if (!signalled) {
      signalled = true
      // Said once, on stderr like the two lines below: an operator (or a test reading the log) can tell a requested
      // shutdown from one the server began itself.
      process.stderr.write(`belay: ${signal} received; shutting down\n`)
      setTimeout(() => {
        process.stderr.write(`belay: shutdown did not finish within ${SHUTDOWN_DEADLINE_MS / 1000} s; exiting\n`)
        process.exit(1)
      }, SHUTDOWN_DEADLINE_MS).unref()
      return
    }
    process.stderr.write(`belay: ${signal} again; exiting without finishing the shutdown\n`)
    process.exit(128 + (SIGNAL_NUMBERS[signal] ?? 15))
  }
  process.on("SIGTERM", onSignal)
  process.on("SIGINT", onSignal)
}

const main = async () => {
  const argv = process.argv.slice(2)
  if (argv[0] === "serve") {
    const { serve } = await import("../main.js")
    boundShutdown()
    NodeRuntime.runMain(
      serve.pipe(
        Effect.catchTag("StartupError", (e) =>
          Effect.sync(() => {
            process.stderr.write(`belay: ${e.message}\n`)
            process.exit(1)
          })
        )
      ),
      { disableErrorReporting: false }
    )
    return
  }
  process.exitCode = await runClient(argv)
}

void main()
