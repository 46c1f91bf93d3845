/**
 * AdminServer owns the Unix admin socket that `belay account|network|token|channel …`
 * talk to: one JSON request line in, one JSON response line out, then close.
 * The socket file is created mode 0600 (only the operator's user may drive the server).
 * Each connection is served by its own fiber; the listener closes with the scope.
 * `network list` joins each stored network with its actor's live status (NetworkControl).
 */
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Path from "node:path"
import { Effect, Either, Layer, Option, ParseResult, Runtime, Schema } from "effect"
import { NetworkControl } from "../actors/NetworkApi.js"
import { type AdminNetwork, AdminRequest, type AdminResponse } from "../schema/Admin.js"
import { JSON_MAX_DEPTH, parseBoundedJson } from "../schema/BoundedJson.js"
import { Accounts } from "../services/identity/Accounts.js"
import { makeAccountLimitsAdmin } from "./AccountLimitsAdmin.js"
import { AccountDeletion } from "../services/memberdata/AccountDeletion.js"
import { makeAdminExport } from "./AdminExport.js"
import { ApiTokens } from "../services/identity/ApiTokens.js"
import { AppConfig } from "../services/AppConfig.js"
import { E2eKeys } from "../services/networks/E2eKeys.js"
import { Networks } from "../services/networks/Networks.js"

const MAX_REQUEST = 64 * 1024

/** Runs one admin request; expected failures become `{ok:false, error}` with a one-line message. */
export const makeAdminHandler = Effect.gen(function*() {
  const accounts = yield* Accounts
  const networks = yield* Networks
  const tokens = yield* ApiTokens
  const e2e = yield* E2eKeys
  const control = yield* NetworkControl
  const limitsAdmin = yield* makeAccountLimitsAdmin
  const deletion = yield* AccountDeletion

  /** The account's networks with their live connection: state, current nick, last error, next retry. */
  const networkList = (account: string) =>
    Effect.flatMap(networks.list(account), (rows) =>
      Effect.forEach(rows, (n) =>
        Effect.map(control.status(n.id), (status): AdminNetwork => ({
          id: n.id,
          name: n.name,
          host: n.host,
          port: n.port,
          tls: n.tls,
          tlsInsecure: n.tlsInsecure,
          nick: n.nick,
          enabled: n.enabled,
          hasServerPassword: n.hasServerPassword,
          hasSasl: n.hasSasl,
          state: status.state,
          currentNick: status.nick,
          lastError: status.lastError,
          nextRetryAt: status.nextRetryAt
        }))))

  const run = (request: AdminRequest): Effect.Effect<unknown, { readonly message: string }> => {
    switch (request._tag) {
      case "AccountAdd":
        return Effect.map(accounts.create(request.name, request.password), (a) => ({ id: a.id, name: a.name }))
      case "AccountList":
        return Effect.map(accounts.list(), (rows) =>
          rows.map((a) => ({ id: a.id, name: a.name, status: a.status, createdAt: a.createdAt.toISOString() })))
      case "AccountPause":
        return Effect.map(accounts.setStatus(request.name, "paused"), (a) => ({ name: a.name, status: a.status }))
      case "AccountResume":
        return Effect.map(accounts.setStatus(request.name, "active"), (a) => ({ name: a.name, status: a.status }))
      case "AccountRecover":
        return Effect.map(accounts.recover(request.name, request.password), (r) => ({ revokedApps: r.revokedApps }))
      case "AccountLimits":
        return limitsAdmin.set(request)
      case "AccountShow":
        return limitsAdmin.show(request.name)
      case "AccountDelete":
        return Effect.map(deletion.begin(request.name), (d) => ({ deleting: request.name, networks: d.networks }))
      case "AccountExport":
        // Streamed by AdminExport before it gets here (its answer is not one line).
        return Effect.fail({ message: "account export is answered as a stream" })
      case "NetworkAdd":
        return Effect.map(
          networks.add(request.account, {
            name: request.name,
            host: request.host,
            port: request.port,
            tls: request.tls,
            tlsInsecure: request.tlsInsecure,
            nick: request.nick ?? request.account,
            username: Option.fromNullable(request.username),
            realname: Option.fromNullable(request.realname),
            serverPassword: Option.fromNullable(request.serverPassword),
            sasl: Option.fromNullable(request.saslPlain),
            join: request.join
          }),
          (id) => ({ id })
        )
      case "NetworkList":
        return networkList(request.account)
      case "NetworkRemove":
        return Effect.as(networks.remove(request.account, request.id), { removed: request.id })
      case "TokenAdd":
        return Effect.map(tokens.create(request.account, request.name, request.scope), (token) => ({ token }))
      case "TokenList":
        return Effect.map(tokens.list(request.account), (rows) =>
          rows.map((t) => ({
            name: t.name,
            scope: t.scope,
            createdAt: t.createdAt.toISOString(),
            lastUsedAt: t.lastUsedAt?.toISOString() ?? null,
            revoked: t.revokedAt !== null,
            revokedAt: t.revokedAt?.toISOString() ?? null
          })))
      case "TokenRevoke":
        return Effect.as(tokens.revoke(request.account, request.name), { revoked: request.name })
      case "ChannelEncrypt":
        return Effect.as(e2e.set(request.account, request.networkId, request.target, request.key), {
          encrypted: request.target
        })
      case "ChannelDecrypt":
        return Effect.map(e2e.clear(request.account, request.networkId, request.target), (changed) => ({
          decrypted: request.target,
          changed
        }))
    }
  }

  const decode = Schema.decodeUnknownEither(AdminRequest)

  return (line: string): Effect.Effect<AdminResponse> => {
    // Bounded like every JSON the server reads: the refusal's formatter recurses into the value (BoundedJson).
    const parsed = parseBoundedJson(line)
    if (Either.isLeft(parsed)) {
      return Effect.succeed({
        ok: false,
        error: parsed.left === "not-json" ? "invalid request: not JSON" : `invalid request: nests deeper than ${JSON_MAX_DEPTH} levels`
      })
    }
    const request = decode(parsed.right)
    if (request._tag === "Left") {
      return Effect.succeed({
        ok: false,
        error: `invalid request: ${ParseResult.TreeFormatter.formatErrorSync(request.left).split("\n").slice(-1)[0]?.trim()}`
      })
    }
    return run(request.right).pipe(
      Effect.map((result): AdminResponse => ({ ok: true, result })),
      Effect.catchAll((e) => Effect.succeed<AdminResponse>({ ok: false, error: e.message })),
      Effect.catchAllDefect((defect) =>
        Effect.logError("admin command failed", defect).pipe(
          Effect.as<AdminResponse>({ ok: false, error: "internal error; see the server log" })
        )
      ),
      Effect.annotateLogs("admin", request.right._tag)
    )
  }
})

export const AdminServerLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const config = yield* AppConfig
    const handle = yield* makeAdminHandler
    const exportFor = yield* makeAdminExport
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const socketPath = config.adminSocket

    yield* Effect.sync(() => Fs.mkdirSync(Path.dirname(socketPath), { recursive: true, mode: 0o700 }))
    // A stale socket file from a crashed run would make listen fail with EADDRINUSE; remove
    // it only if nothing answers on it (a second server must not steal a live socket).
    const alive = yield* Effect.async<boolean>((resume) => {
      const probe = Net.connect(socketPath)
      probe.once("connect", () => {
        probe.destroy()
        resume(Effect.succeed(true))
      })
      probe.once("error", () => resume(Effect.succeed(false)))
    })
    if (alive) return yield* Effect.dieMessage(`another belay server is running on ${socketPath}`)
    yield* Effect.sync(() => Fs.rmSync(socketPath, { force: true }))

    const server = Net.createServer((socket) => {
      let buffer = ""
      socket.setEncoding("utf8")
      socket.on("error", () => socket.destroy())
      socket.on("data", (chunk: string) => {
        buffer += chunk
        if (buffer.length > MAX_REQUEST) {
          socket.end(JSON.stringify({ ok: false, error: "request too large" }) + "\n")
          return
        }
        const nl = buffer.indexOf("\n")
        if (nl === -1) return
        const line = buffer.slice(0, nl)
        socket.pause()
        runFork(
          Option.getOrElse(exportFor(line, socket), () =>
            Effect.flatMap(handle(line), (response) => Effect.sync(() => socket.end(JSON.stringify(response) + "\n"))))
        )
      })
    })

    yield* Effect.async<void, Error>((resume) => {
      server.once("error", (e) => resume(Effect.fail(e)))
      // umask-independent: restrict the socket before anyone can connect
      const previous = process.umask(0o177)
      server.listen(socketPath, () => {
        process.umask(previous)
        resume(Effect.void)
      })
    }).pipe(Effect.orDie)
    yield* Effect.logInfo("admin socket listening").pipe(Effect.annotateLogs("path", socketPath))

    yield* Effect.addFinalizer(() =>
      Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
      }).pipe(
        Effect.timeout("2 seconds"),
        Effect.ignore,
        Effect.ensuring(Effect.sync(() => Fs.rmSync(socketPath, { force: true })))
      )
    )
  })
)
