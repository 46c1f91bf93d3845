/**
 * DirectPeers: the caller's end of the direct command channel (DirectWire.ts; docs/decisions/several-nodes.md "Several nodes", the
 * direct path): one persistent, authenticated TCP connection per other node's listener, opened on first use and
 * forgotten when it closes, carrying any number of requests at once (each with its id).
 *
 * A call's outcome says what the caller may do next: `done` and `failed` (a tool failure) are the owner's answer;
 * `notHere` (the listener does not run the network) and `unsent` (no authenticated connection came up, so the command
 * never left this node) let the caller take the entity path; `lost` (the connection closed after the command was
 * written) does not, as the owner may have run it: that call is `not-connected`. A call has no bound of its own: the
 * caller's (COMMAND_TIMEOUT) interrupts it, which forgets it.
 *
 * Concurrency rule: the connections' callbacks run on the event loop, one at a time; the peer table and each
 * connection's pending table are plain Maps changed only there and by a call's registration and interruption.
 */
import * as Net from "node:net"
import { Context, Effect, Layer } from "effect"
import type { ToolFailure } from "../schema/ToolErrors.js"
import { SecretBox } from "../services/crypto/SecretBox.js"
import {
  CHANNEL_KEY_PURPOSE,
  decodeFailure,
  type DirectAddress,
  type DirectCommand,
  frame,
  HANDSHAKE_TIMEOUT_MS,
  FrameReader,
  FrameWriter,
  isDirectReply,
  isListenerGreeting,
  isListenerProof,
  nonce,
  proof,
  proofMatches
} from "./DirectWire.js"

export type DirectOutcome =
  | { readonly _tag: "done" }
  | { readonly _tag: "failed"; readonly error: ToolFailure }
  | { readonly _tag: "notHere" }
  | { readonly _tag: "unsent" }
  | { readonly _tag: "lost" }
  | { readonly _tag: "timeout" }

export interface DirectPeersService {
  /** `boundMs`: how long the call may wait for its answer before it answers `timeout`. */
  readonly call: (
    address: DirectAddress,
    networkId: number,
    command: DirectCommand,
    boundMs: number
  ) => Effect.Effect<DirectOutcome>
}

export class DirectPeers extends Context.Tag("belay/cluster/DirectPeers")<DirectPeers, DirectPeersService>() {}

interface Pending {
  readonly resolve: (outcome: DirectOutcome) => void
  /** Written to an authenticated connection: its loss may have left the command run. */
  sent: boolean
  readonly line: string
}

interface Peer {
  readonly socket: Net.Socket
  readonly writer: FrameWriter
  ready: boolean
  readonly pending: Map<number, Pending>
  /** Requests queued on `writer` since its last write: written (`sent`) when it writes. */
  unflushed: Array<Pending>
}

const NOT_HERE: DirectOutcome = { _tag: "notHere" }
const DONE: DirectOutcome = { _tag: "done" }
const TIMEOUT: DirectOutcome = { _tag: "timeout" }

/** The peers of this node, for the scope's life (closing it closes every connection). */
export const make = (secret: Buffer) =>
  Effect.gen(function*() {
    const peers = new Map<string, Peer>()
    let nextId = 0

    const open = (address: DirectAddress, name: string): Peer => {
      const socket = Net.connect({ host: address.host, port: address.port })
      const writer = new FrameWriter(socket, () => {
        for (const pending of peer.unflushed) pending.sent = true
        peer.unflushed = []
      })
      const peer: Peer = { socket, writer, ready: false, pending: new Map(), unflushed: [] }
      peers.set(name, peer)
      socket.setNoDelay(true)
      // A peer whose host died sends no FIN: the keepalive closes the connection (its calls are bounded meanwhile).
      socket.setKeepAlive(true, 10_000)
      socket.setEncoding("utf8")
      const handshake = setTimeout(() => socket.destroy(), HANDSHAKE_TIMEOUT_MS)
      const mine = nonce()
      let theirs: string | undefined

      const onReply = (reply: unknown) => {
        // A frame that is no reply: the peer speaks something else, as FrameReader's refusals (calls in flight: lost).
        if (!isDirectReply(reply)) return void socket.destroy()
        const pending = peer.pending.get(reply.id)
        if (pending === undefined) return
        peer.pending.delete(reply.id)
        if (reply.ok === true) return pending.resolve(DONE)
        if (reply.notHere === true) return pending.resolve(NOT_HERE)
        const error = decodeFailure(reply.error)
        // An answer this node cannot read is no tool failure: as if the connection had gone.
        pending.resolve(error._tag === "Right" ? { _tag: "failed", error: error.right } : { _tag: "lost" })
      }

      const reader = new FrameReader((value) => {
        if (peer.ready) return onReply(value)
        if (theirs === undefined && isListenerGreeting(value)) {
          theirs = value.hello
          writer.write(frame({ nonce: mine, proof: proof(secret, "caller", theirs, mine) }))
          return
        }
        if (theirs === undefined || !isListenerProof(value) || !proofMatches(proof(secret, "listener", mine, theirs), value.proof)) {
          socket.destroy()
          return
        }
        peer.ready = true
        clearTimeout(handshake)
        for (const pending of peer.pending.values()) {
          peer.unflushed.push(pending)
          writer.write(pending.line)
        }
      })
      socket.on("data", (chunk: string) => {
        if (!reader.feed(chunk)) socket.destroy()
      })
      socket.on("error", () => socket.destroy())
      socket.on("close", () => {
        clearTimeout(handshake)
        if (peers.get(name) === peer) peers.delete(name)
        const gone = [...peer.pending.values()]
        peer.pending.clear()
        peer.unflushed = []
        for (const pending of gone) pending.resolve({ _tag: pending.sent ? "lost" : "unsent" })
      })
      return peer
    }

    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const peer of peers.values()) peer.socket.destroy()
      })
    )

    const service: DirectPeersService = {
      call: (address, networkId, command, boundMs) =>
        Effect.async<DirectOutcome>((resume) => {
          const name = `${address.host}:${address.port}`
          const peer = peers.get(name) ?? open(address, name)
          const id = ++nextId
          const line = frame({ id, network: networkId, command })
          const deadline = setTimeout(() => {
            if (peer.pending.delete(id)) resume(Effect.succeed(TIMEOUT))
          }, boundMs)
          const pending: Pending = {
            resolve: (outcome) => {
              clearTimeout(deadline)
              resume(Effect.succeed(outcome))
            },
            sent: false,
            line
          }
          peer.pending.set(id, pending)
          if (peer.ready) {
            peer.unflushed.push(pending)
            peer.writer.write(line)
          }
          return Effect.sync(() => {
            clearTimeout(deadline)
            peer.pending.delete(id)
          })
        })
    }
    return service
  })

export const DirectPeersLive = Layer.scoped(
  DirectPeers,
  Effect.flatMap(SecretBox, (box) => make(box.derive(CHANNEL_KEY_PURPOSE)))
)
