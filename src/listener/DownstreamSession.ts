/**
 * DownstreamSession: one IRC client connection from accept to close. Its socket's data callbacks only split lines
 * (LineReader) and offer them to the session's inbox, where the hub's live events also arrive; one fiber takes the
 * inbox in order and alone reads and changes the connection's state (Downstream.ts): registration
 * (Registration.ts) within REGISTRATION_TIMEOUT (Effect's Clock), then the welcome burst and backlog, then the
 * client's commands (ClientCommands.ts) and the live events (LiveEvents.ts). The session is registered with the hub
 * before its welcome is drawn, so the events meanwhile wait in the inbox and follow the burst.
 *
 * Bounds (docs/contract.md "The IRC client listener"): a line is at most MAX_CLIENT_LINE_BYTES (else 417), its tag
 * data at most CLIENT_TAGS_MAX_BYTES (else 417, message-tags §"Size limit"), an
 * address has at most UNREGISTERED_PER_ADDRESS connections registering, the inbox holds at most INBOX_BOUND inputs
 * and the socket at most OUTBOUND_BYTES unread: past either bound the client is too slow or too fast, and this
 * connection alone is closed. QUIT ends only this connection.
 *
 * Concurrency rule: the socket callbacks never touch the state; they offer to the unbounded inbox, whose size they
 * check against INBOX_BOUND (and destroy the socket past it). Everything else runs on the session fiber.
 */
import type * as Net from "node:net"
import { Duration, Effect, Fiber, Option, Queue } from "effect"
import { parseLine } from "../irc/IrcLine.js"
import { CLIENT_TAGS_MAX_BYTES, rawTagDataBytes } from "../irc/TaggedMessages.js"
import { remember, sendBacklog } from "./Backlog.js"
import { onClientLine } from "./ClientCommands.js"
import { onCredentialEvent } from "./CredentialCheck.js"
import { flush, makeDownstream, numeric, withLabel } from "./Downstream.js"
import { MAX_CLIENT_LINE_BYTES, type ReadItem, LineReader } from "./LineReader.js"
import type { ListenerDeps } from "./ListenerDeps.js"
import { onHubEvent } from "./LiveEvents.js"
import { applyPreAway, closeWith, complete, onRegistering } from "./Registration.js"
import type { HubEvent, SessionHandle } from "./SessionHub.js"
import { welcome } from "./WelcomeBurst.js"

export const REGISTRATION_TIMEOUT = Duration.seconds(30)
/** Inputs (client lines and live events) waiting for the session fiber before the connection is closed. */
export const INBOX_BOUND = 10_000
/** Inputs handled before what they queued is written to the socket. */
const INPUTS_PER_WRITE = 256

type Input =
  | { readonly _tag: "Client"; readonly item: ReadItem }
  | { readonly _tag: "Hub"; readonly event: HubEvent }
  | { readonly _tag: "RegistrationTimeout" }
  | { readonly _tag: "Closed" }

export const runSession = (deps: ListenerDeps, socket: Net.Socket, id: number, ipKey: string): Effect.Effect<void> =>
  Effect.gen(function*() {
    const d = makeDownstream(id, socket, socket.remoteAddress ?? "unknown", ipKey)
    const inbox = yield* Queue.unbounded<Input>()
    const offer = (input: Input) => {
      if (d.closing && input._tag !== "Closed") return
      inbox.unsafeOffer(input)
      if (Option.getOrElse(inbox.unsafeSize(), () => 0) > INBOX_BOUND) {
        d.closing = true
        socket.destroy()
      }
    }
    const reader = new LineReader()
    socket.on("data", (chunk: Buffer) => {
      for (const item of reader.push(chunk)) offer({ _tag: "Client", item })
    })
    socket.on("close", () => inbox.unsafeOffer({ _tag: "Closed" }))
    socket.on("error", () => socket.destroy())
    socket.setNoDelay(true)

    if (!deps.hub.admit(ipKey)) {
      closeWith(d, "Too many unregistered connections from your address")
      return
    }
    let unregistered = true
    const releaseSlot = () => {
      if (unregistered) deps.hub.release(ipKey)
      unregistered = false
    }
    let handle: SessionHandle | undefined
    const timer = yield* Effect.sleep(REGISTRATION_TIMEOUT).pipe(
      Effect.zipRight(Effect.sync(() => offer({ _tag: "RegistrationTimeout" }))),
      Effect.fork
    )

    const onLine = (raw: string): Effect.Effect<boolean> =>
      Effect.gen(function*() {
        // message-tags §"Size limit": more tag data than a client may send is refused whole, never truncated.
        if (rawTagDataBytes(raw) > CLIENT_TAGS_MAX_BYTES) {
          numeric(d, "417", "Input line was too long")
          return true
        }
        const line = parseLine(raw)
        if (line === undefined) return true
        if (!d.registered) {
          const step = yield* onRegistering(deps, d, line)
          if (step === "close") return false
          if (step === "continue") return true
          if ((yield* complete(deps, d)) === "close") return false
          yield* Fiber.interrupt(timer)
          releaseSlot()
          d.registered = true
          const account = d.signedIn!.accountId
          handle = {
            id,
            accountId: account,
            networkId: d.network?.id ?? null,
            offer: (event) => offer({ _tag: "Hub", event }),
            present: d.present
          }
          d.handle = handle
          deps.hub.attach(handle, d.preAway !== undefined && d.preAway !== "*")
          // What ended while it signed in was announced before the hub knew this session.
          yield* onCredentialEvent(deps, d, { _tag: "Recheck" })
          if (d.closing) return false
          yield* welcome(deps, d)
          yield* applyPreAway(deps, d)
          yield* sendBacklog(deps, d)
          return true
        }
        const label = line.tags.get("label")
        // With echo-message the echo itself answers a labeled PRIVMSG or NOTICE (ClientCommands.ts).
        const echoAnswers = (line.command === "PRIVMSG" || line.command === "NOTICE") && d.caps.enabled.has("echo-message")
        const ownLabel = d.caps.enabled.has("labeled-response") ? label : undefined
        yield* echoAnswers
          ? onClientLine(deps, d, line, ownLabel)
          : withLabel(d, label, onClientLine(deps, d, line, ownLabel))
        return !d.closing
      })

    const step = (input: Input): Effect.Effect<boolean> => {
      switch (input._tag) {
        case "Closed":
          return Effect.succeed(false)
        case "RegistrationTimeout":
          return Effect.sync(() => (d.registered ? true : (closeWith(d, "Connection registration timed out"), false)))
        case "Hub":
          return d.registered ? Effect.as(onHubEvent(deps, d, input.event), !d.closing) : Effect.succeed(true)
        case "Client":
          if (input.item._tag === "TooLong") {
            numeric(d, "417", `Input line was too long (at most ${MAX_CLIENT_LINE_BYTES} bytes)`)
            return Effect.succeed(true)
          }
          return onLine(input.item.line)
      }
    }

    const safeStep = (input: Input) =>
      step(input).pipe(
        Effect.catchAllCause((cause) => Effect.as(Effect.logWarning("IRC client session failed on an input", cause), false))
      )
    // What waits in the inbox is handled in order, then written in one go (Downstream.flush).
    const loop: Effect.Effect<void> = Effect.flatMap(Queue.takeBetween(inbox, 1, INPUTS_PER_WRITE), (inputs) =>
      Effect.gen(function*() {
        let more = true
        for (const input of inputs) {
          more = (yield* safeStep(input)) && !d.closing
          if (!more) break
        }
        flush(d)
        return more
      }).pipe(Effect.flatMap((more) => (more ? loop : Effect.void))))

    yield* loop.pipe(
      Effect.ensuring(Effect.gen(function*() {
        yield* Fiber.interrupt(timer)
        releaseSlot()
        if (handle !== undefined) deps.hub.detach(handle)
        yield* remember(deps, d).pipe(Effect.catchAllCause((cause) => Effect.logWarning("client delivery not recorded", cause)))
        flush(d)
        d.closing = true
        if (!socket.destroyed) {
          socket.end()
          // A peer that never reads its last lines does not keep the socket.
          setTimeout(() => socket.destroy(), 2000).unref()
        }
      }))
    )
  })
