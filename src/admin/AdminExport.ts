/**
 * AdminExport answers `belay account export NAME` on the admin socket, the one admin request whose answer is not one
 * line: a head line (the AdminResponse: `{ok: true, result: {format, version}}`, or the refusal alone), then the
 * archive's JSON Lines (AccountExport) until the socket ends. The archive's last line is its `end` line, so the CLI
 * tells a cut export from a whole one (docs/decisions/leaving.md "The export: one JSON Lines stream, a `kind` on every
 * line"). Written at the pace the CLI reads, one page at a time.
 *
 * Concurrency rule: each export runs on its connection's fiber; nothing is shared between connections.
 */
import type * as Net from "node:net"
import { Effect, Either, Option, Schema } from "effect"
import { AdminRequest, type AdminResponse } from "../schema/Admin.js"
import { parseBoundedJson } from "../schema/BoundedJson.js"
import { AccountExport, EXPORT_FORMAT, EXPORT_VERSION, writeTo } from "../services/memberdata/AccountExport.js"

const decode = Schema.decodeUnknownEither(AdminRequest)

const head = (response: AdminResponse) => JSON.stringify(response) + "\n"

export const makeAdminExport = Effect.gen(function*() {
  const exporter = yield* AccountExport

  /** Some(the whole answer) when `line` is an export request; None for every other line (AdminServer answers it). */
  return (line: string, socket: Net.Socket): Option.Option<Effect.Effect<void>> => {
    const parsed = parseBoundedJson(line)
    if (Either.isLeft(parsed)) return Option.none()
    const request = decode(parsed.right)
    if (Either.isLeft(request) || request.right._tag !== "AccountExport") return Option.none()
    const name = request.right.name
    return Option.some(
      exporter.byName(name).pipe(
        Effect.flatMap((lines) =>
          Effect.gen(function*() {
            socket.write(head({ ok: true, result: { format: EXPORT_FORMAT, version: EXPORT_VERSION } }))
            yield* writeTo(lines, socket)
            socket.end()
            yield* Effect.logInfo("account exported").pipe(Effect.annotateLogs({ account: name }))
          })
        ),
        Effect.catchTags({
          AccountNotFound: (e) => Effect.sync(() => socket.end(head({ ok: false, error: e.message }))),
          PeerGone: () => Effect.logInfo("account export abandoned by its reader").pipe(Effect.annotateLogs({ account: name }))
        }),
        Effect.catchAllCause((cause) =>
          // Without its `end` line, the CLI reports the export as cut short.
          Effect.zipRight(Effect.logError("account export failed", cause), Effect.sync(() => socket.destroy()))
        ),
        Effect.annotateLogs("admin", "AccountExport")
      )
    )
  }
})
