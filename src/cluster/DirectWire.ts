/**
 * DirectWire: the protocol of the direct command channel between cluster nodes (docs/decisions/several-nodes.md "Several nodes",
 * the direct path): the commands it carries, how a frame is written and read, the handshake's proofs, and the one
 * place a command becomes a call on the owner's port.
 *
 * - Frames are JSON texts, one per line (`\n`; JSON.stringify never writes a raw newline), at most MAX_FRAME bytes.
 * - Handshake, both ways (each side proves it holds the key derived from the shared BELAY_SECRET_KEY): the listener
 *   sends `{"hello": nonceL}`, the caller answers `{"nonce": nonceC, "proof": HMAC(key, "caller", nonceL, nonceC)}`,
 *   the listener `{"proof": HMAC(key, "listener", nonceC, nonceL)}`; a wrong proof closes the connection.
 * - Then requests `{"id", "network", "command"}` and replies `{"id", "ok": true}`, `{"id", "error": ToolFailure}`
 *   or `{"id", "notHere": true}` (the listener does not run the network now: the caller takes the entity path).
 *
 * Concurrency rule: pure values and functions; a FrameReader belongs to the one socket whose data it is fed, a
 * FrameWriter to the one socket it writes; both are used from the event loop only.
 */
import * as Crypto from "node:crypto"
import { Effect, Option, Schema } from "effect"
import type { NetworkControlService } from "../actors/NetworkApi.js"
import { ToolFailure } from "../schema/ToolErrors.js"

/** The longest frame either side accepts; a longer one closes the connection (an IRC line is at most 8 KiB). */
export const MAX_FRAME = 64 * 1024

/** A caller or listener that has not proved the key within this long is dropped. */
export const HANDSHAKE_TIMEOUT_MS = 5_000

/** Where a node's listener is reached (DirectListener.ts). */
export const DirectAddress = Schema.Struct({ host: Schema.String, port: Schema.Number })
export type DirectAddress = typeof DirectAddress.Type

/** The key of the channel: derived from BELAY_SECRET_KEY for this use only (SecretBox `derive`). */
export const CHANNEL_KEY_PURPOSE = "cluster-direct-channel"

const key = Schema.NullOr(Schema.String)

/** The commands the direct path carries: the writes a tool call makes, each answered by the owner's actor. */
export const DirectCommand = Schema.Union(
  Schema.TaggedStruct("Say", {
    kind: Schema.Literal("privmsg", "action", "notice"),
    target: Schema.String,
    text: Schema.String
  }),
  Schema.TaggedStruct("Raw", { line: Schema.String }),
  Schema.TaggedStruct("RawLines", { lines: Schema.Array(Schema.String) }),
  Schema.TaggedStruct("Join", { channel: Schema.String, key }),
  Schema.TaggedStruct("Part", { channel: Schema.String, reason: key }),
  Schema.TaggedStruct("Nick", { nick: Schema.String }),
  Schema.TaggedStruct("Away", { message: key }),
  Schema.TaggedStruct("Whois", { nick: Schema.String }),
  Schema.TaggedStruct("SetTopic", { channel: Schema.String, topic: Schema.String })
)
export type DirectCommand = typeof DirectCommand.Type

export const DirectRequest = Schema.Struct({
  id: Schema.Number,
  network: Schema.Number,
  command: DirectCommand
})
export type DirectRequest = typeof DirectRequest.Type

export const decodeRequest = Schema.decodeUnknownEither(DirectRequest)

/**
 * The handshake's frames and the replies, as a reader checks them before reading a member: a peer, or anyone who
 * reaches the port before proving the key, may send any JSON (`null`, a number, an array). Plain shapes, so a guard
 * (`Schema.is`) is enough; members added by a later Belay are ignored.
 */
const ListenerGreeting = Schema.Struct({ hello: Schema.String })
const CallerProof = Schema.Struct({ nonce: Schema.String, proof: Schema.String })
const ListenerProof = Schema.Struct({ proof: Schema.String })
/** A reply: its id and one of `ok`, `notHere` or `error` (a ToolFailure, read by `decodeFailure`). */
const DirectReply = Schema.Struct({
  id: Schema.Number,
  ok: Schema.optional(Schema.Literal(true)),
  notHere: Schema.optional(Schema.Literal(true)),
  error: Schema.optional(Schema.Unknown)
})
export const isListenerGreeting = Schema.is(ListenerGreeting)
export const isCallerProof = Schema.is(CallerProof)
export const isListenerProof = Schema.is(ListenerProof)
export const isDirectReply = Schema.is(DirectReply)
export const encodeFailure = Schema.encodeSync(ToolFailure)
const decodeFailureWithStack = Schema.decodeUnknownEither(ToolFailure)

/**
 * A tool failure from the owner's answer. Built without a stack trace: the stack would be this socket callback's, which
 * says nothing about where the owner failed, and capturing it is a large part of a refused call's cost.
 */
export const decodeFailure = (value: unknown): ReturnType<typeof decodeFailureWithStack> => {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return decodeFailureWithStack(value)
  } finally {
    Error.stackTraceLimit = limit
  }
}

/** The owner's port method a command stands for: the same calls the entity's handlers make (NetworkEntityLive.ts). */
export const execute = (
  control: NetworkControlService,
  networkId: number,
  command: DirectCommand
): Effect.Effect<void, ToolFailure> => {
  switch (command._tag) {
    case "Say":
      return control.say(networkId, command.kind, command.target, command.text)
    case "Raw":
      return control.raw(networkId, command.line)
    case "RawLines":
      return control.rawLines(networkId, command.lines)
    case "Join":
      return control.join(networkId, command.channel, Option.fromNullable(command.key))
    case "Part":
      return control.part(networkId, command.channel, Option.fromNullable(command.reason))
    case "Nick":
      return control.nick(networkId, command.nick)
    case "Away":
      return control.away(networkId, Option.fromNullable(command.message))
    case "Whois":
      return control.whois(networkId, command.nick)
    case "SetTopic":
      return control.setTopic(networkId, command.channel, command.topic)
  }
}

export const nonce = (): string => Crypto.randomBytes(16).toString("hex")

/** One side's proof: who speaks (so a proof cannot be reflected back), then both nonces, the speaker's peer's first. */
export const proof = (secret: Buffer, speaker: "caller" | "listener", theirs: string, mine: string): string =>
  Crypto.createHmac("sha256", secret).update(`${speaker}\n${theirs}\n${mine}`).digest("hex")

/** Constant-time comparison of a proof received with the one expected. */
export const proofMatches = (expected: string, received: unknown): boolean => {
  if (typeof received !== "string" || received.length !== expected.length) return false
  return Crypto.timingSafeEqual(Buffer.from(expected), Buffer.from(received))
}

/** A frame: one JSON text and its newline. */
export const frame = (value: unknown): string => `${JSON.stringify(value)}\n`

/** What a FrameWriter writes to: a socket, as far as the writer needs one. */
export interface FrameSink {
  readonly destroyed: boolean
  readonly write: (text: string) => unknown
}

/**
 * Writes a socket's frames, those of one event-loop turn together: they are queued and written as one text once the
 * turn's I/O callbacks have run (setImmediate). Every call in flight answered in one turn then costs one write and one
 * wake-up of the peer instead of one each: on loopback, and the more so with both nodes on one core, each write is a
 * system call that runs the peer's receive path and wakes it. `onFlush` runs after each write (the caller marks what
 * has now left this node); a socket destroyed before the turn ends gets nothing.
 */
export class FrameWriter {
  private queued: Array<string> = []
  private scheduled = false
  constructor(private readonly sink: FrameSink, private readonly onFlush?: () => void) {}

  write(line: string): void {
    this.queued.push(line)
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(this.flush)
  }

  private readonly flush = (): void => {
    this.scheduled = false
    const lines = this.queued
    this.queued = []
    if (this.sink.destroyed) return
    this.sink.write(lines.length === 1 ? lines[0]! : lines.join(""))
    this.onFlush?.()
  }
}

/**
 * Splits a socket's data into parsed frames. `feed` answers false when a frame is longer than MAX_FRAME or is not
 * JSON: the socket is then closed, as its peer speaks something else. Not the IRC listener's LineReader, which drops
 * an over-long line and reads on, as an IRC client's stray line must not end its session; here either is a peer that
 * is not Belay.
 */
export class FrameReader {
  private buffered = ""
  constructor(private readonly onFrame: (value: unknown) => void) {}

  feed(chunk: string): boolean {
    let text = this.buffered + chunk
    let newline = text.indexOf("\n")
    while (newline !== -1) {
      const line = text.slice(0, newline)
      text = text.slice(newline + 1)
      let value: unknown
      try {
        value = JSON.parse(line)
      } catch {
        return false
      }
      this.onFrame(value)
      newline = text.indexOf("\n")
    }
    this.buffered = text
    return Buffer.byteLength(text) <= MAX_FRAME
  }
}
