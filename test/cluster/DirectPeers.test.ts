// The direct command channel between nodes (src/cluster/DirectWire.ts, DirectListener.ts, DirectPeers.ts) on loopback
// sockets: frames, the handshake, the fence's refusal, and what a caller is told when the listener goes away.
import * as Crypto from "node:crypto"
import * as Net from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Scope } from "effect"
import type { NetworkControlService } from "../../src/actors/NetworkApi.js"
import { listen } from "../../src/cluster/DirectListener.js"
import { make as makePeers } from "../../src/cluster/DirectPeers.js"
import {
  type DirectCommand,
  FrameReader,
  FrameWriter,
  MAX_FRAME,
  nonce,
  proof
} from "../../src/cluster/DirectWire.js"
import { NotConnected, SendQueueFull } from "../../src/schema/ToolErrors.js"

const SAY: DirectCommand = { _tag: "Say", kind: "privmsg", target: "#belay", text: "hello" }
/** A call's deadline where the test does not reach it. */
const BOUND = 30_000

/** A port whose `say` is `say`; the channel carries no other method in these tests. */
const controlOf = (say: NetworkControlService["say"]): NetworkControlService =>
  // Only `say` is reached: the listener calls the one method the command names (DirectWire's `execute`).
  ({ say }) as unknown as NetworkControlService

/** A listener in its own scope (closed by `close`), accepting what `accepts` says, over `control`. */
const startListener = (
  secret: Buffer,
  control: NetworkControlService,
  accepts: (networkId: number) => boolean = () => true
) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const listener = yield* listen({ host: "127.0.0.1", port: 0, secret, accepts, control }).pipe(
      Scope.extend(scope)
    )
    return { address: listener.address, close: Scope.close(scope, Exit.void) }
  })

/** A listener whose `say` never ends for the text "hang" and succeeds for any other. */
const hangingListener = (secret: Buffer) =>
  startListener(secret, controlOf((_networkId, _kind, _target, text) => text === "hang" ? Effect.never : Effect.void))

describe("FrameReader", () => {
  it("hands over one value per line, whatever the chunks", () => {
    const seen: Array<unknown> = []
    const reader = new FrameReader((value) => seen.push(value))
    expect(reader.feed("{\"a\":1}\n{\"b\"")).toBe(true)
    expect(reader.feed(":2}\n")).toBe(true)
    expect(seen).toEqual([{ a: 1 }, { b: 2 }])
  })

  it("refuses what is not JSON and a frame past MAX_FRAME", () => {
    expect(new FrameReader(() => {}).feed("hello\n")).toBe(false)
    expect(new FrameReader(() => {}).feed("x".repeat(MAX_FRAME + 1))).toBe(false)
  })
})

describe("FrameWriter", () => {
  it.live("writes the frames of one turn as one text, which the reader splits back", () =>
    Effect.gen(function*() {
      const writes: Array<string> = []
      let flushes = 0
      const writer = new FrameWriter({ destroyed: false, write: (text: string) => writes.push(text) }, () => void flushes++)
      writer.write("{\"a\":1}\n")
      writer.write("{\"b\":2}\n")
      writer.write("{\"c\":3}\n")
      expect(writes).toEqual([])
      yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      expect(writes).toHaveLength(1)
      expect(flushes).toBe(1)
      const seen: Array<unknown> = []
      expect(new FrameReader((value) => seen.push(value)).feed(writes[0]!)).toBe(true)
      expect(seen).toEqual([{ a: 1 }, { b: 2 }, { c: 3 }])
    }))

  it.live("writes nothing to a socket destroyed before the turn ended", () =>
    Effect.gen(function*() {
      const writes: Array<string> = []
      let flushes = 0
      const writer = new FrameWriter({ destroyed: true, write: (text: string) => writes.push(text) }, () => void flushes++)
      writer.write("{\"a\":1}\n")
      yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      expect(writes).toEqual([])
      expect(flushes).toBe(0)
    }))
})

describe("DirectPeers over DirectListener", () => {
  it.scopedLive("runs the command on the owner's port and brings its tool failure back as itself", () =>
    Effect.gen(function*() {
      const secret = Crypto.randomBytes(32)
      const said: Array<[number, string]> = []
      const full = new SendQueueFull({ networkId: 7, waiting: 64, capacity: 64, lines: 1, seconds: 128 })
      const listener = yield* startListener(
        secret,
        controlOf((networkId, _kind, _target, text) =>
          Effect.suspend(() => {
            said.push([networkId, text])
            return text === "full" ? Effect.fail(full) : Effect.void
          })
        )
      )
      const peers = yield* makePeers(secret)
      expect(yield* peers.call(listener.address, 7, SAY, BOUND)).toEqual({ _tag: "done" })
      const failed = yield* peers.call(listener.address, 7, { ...SAY, text: "full" }, BOUND)
      expect(failed._tag).toBe("failed")
      expect(failed._tag === "failed" && failed.error).toBeInstanceOf(SendQueueFull)
      expect(failed._tag === "failed" && failed.error.message).toBe(full.message)
      expect(said).toEqual([[7, "hello"], [7, "full"]])
    }))

  it.scopedLive("a defect on the owner answers not-connected at once, as the entity path does", () =>
    Effect.gen(function*() {
      const secret = Crypto.randomBytes(32)
      const listener = yield* startListener(secret, controlOf(() => Effect.dieMessage("broken")))
      const peers = yield* makePeers(secret)
      const outcome = yield* peers.call(listener.address, 7, SAY, BOUND)
      expect(outcome._tag === "failed" && outcome.error).toBeInstanceOf(NotConnected)
    }))

  it.scopedLive("carries calls at once on one connection, each answered by its id", () =>
    Effect.gen(function*() {
      const secret = Crypto.randomBytes(32)
      const listener = yield* startListener(
        secret,
        controlOf((networkId) => networkId === 1 ? Effect.sleep("50 millis") : Effect.fail(new SendQueueFull({ networkId, waiting: 1, capacity: 1, lines: 1, seconds: 2 })))
      )
      const peers = yield* makePeers(secret)
      const [slow, fast] = yield* Effect.all([peers.call(listener.address, 1, SAY, BOUND), peers.call(listener.address, 2, SAY, BOUND)], {
        concurrency: "unbounded"
      })
      expect(slow).toEqual({ _tag: "done" })
      expect(fast._tag).toBe("failed")
    }))

  it.scopedLive("a caller without the key is refused before anything runs", () =>
    Effect.gen(function*() {
      let calls = 0
      const listener = yield* startListener(
        Crypto.randomBytes(32),
        controlOf(() => Effect.sync(() => void calls++))
      )
      const stranger = yield* makePeers(Crypto.randomBytes(32))
      expect(yield* stranger.call(listener.address, 7, SAY, BOUND)).toEqual({ _tag: "unsent" })
      expect(calls).toBe(0)
    }))

  it.scopedLive("a request before the handshake closes the connection unanswered", () =>
    Effect.gen(function*() {
      let calls = 0
      const listener = yield* startListener(Crypto.randomBytes(32), controlOf(() => Effect.sync(() => void calls++)))
      const received = yield* Effect.async<string>((resume) => {
        let text = ""
        const socket = Net.connect(listener.address.port, listener.address.host, () => {
          socket.write(`${JSON.stringify({ id: 1, network: 7, command: SAY })}\n`)
        })
        socket.setEncoding("utf8")
        socket.on("data", (chunk: string) => (text += chunk))
        socket.on("error", () => {})
        socket.on("close", () => resume(Effect.succeed(text)))
      })
      // Only the listener's greeting came back; the connection was then closed.
      expect(received.trim().split("\n").map((l) => Object.keys(JSON.parse(l)))).toEqual([["hello"]])
      expect(calls).toBe(0)
    }))

  it.scopedLive("a handshake frame that is no object (null, a number, an array) closes that connection; the listener serves the next caller", () =>
    Effect.gen(function*() {
      const secret = Crypto.randomBytes(32)
      const listener = yield* startListener(secret, controlOf(() => Effect.void))
      for (const stray of ["null", "7", "[]", "\"hello\""]) {
        const received = yield* Effect.async<string>((resume) => {
          let text = ""
          const socket = Net.connect(listener.address.port, listener.address.host, () => socket.write(`${stray}\n`))
          socket.setEncoding("utf8")
          socket.on("data", (chunk: string) => (text += chunk))
          socket.on("error", () => {})
          socket.on("close", () => resume(Effect.succeed(text)))
        })
        expect(received.trim().split("\n").map((l) => Object.keys(JSON.parse(l)))).toEqual([["hello"]])
      }
      const peers = yield* makePeers(secret)
      expect(yield* peers.call(listener.address, 7, SAY, BOUND)).toEqual({ _tag: "done" })
    }))

  it.scopedLive("a listener whose greeting is no object is dropped: the call is unsent (the entity path may take it), not a crash", () =>
    Effect.gen(function*() {
      const secret = Crypto.randomBytes(32)
      for (const stray of ["null", "7", "[]"]) {
        // A fake listener: its greeting is a stray value instead of {"hello": …}.
        const server = Net.createServer((socket) => {
          socket.on("error", () => {})
          socket.write(`${stray}\n`)
        })
        yield* Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void)))
        yield* Effect.addFinalizer(() => Effect.async<void>((resume) => void server.close(() => resume(Effect.void))))
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        const peers = yield* makePeers(secret)
        expect(yield* peers.call({ host: "127.0.0.1", port }, 7, SAY, BOUND)).toEqual({ _tag: "unsent" })
      }
    }))

  it.scopedLive("a listener whose node does not run the network (or lost it) answers notHere and runs nothing", () =>
    Effect.gen(function*() {
      const secret = Crypto.randomBytes(32)
      let held = true
      let calls = 0
      const listener = yield* startListener(secret, controlOf(() => Effect.sync(() => void calls++)), () => held)
      const peers = yield* makePeers(secret)
      expect(yield* peers.call(listener.address, 7, SAY, BOUND)).toEqual({ _tag: "done" })
      held = false
      expect(yield* peers.call(listener.address, 7, SAY, BOUND)).toEqual({ _tag: "notHere" })
      expect(calls).toBe(1)
    }))

  it.scopedLive("nobody listening: unsent, so the caller may take the entity path", () =>
    Effect.gen(function*() {
      const secret = Crypto.randomBytes(32)
      const listener = yield* startListener(secret, controlOf(() => Effect.void))
      yield* listener.close
      const peers = yield* makePeers(secret)
      expect(yield* peers.call(listener.address, 7, SAY, BOUND)).toEqual({ _tag: "unsent" })
    }))

  it.scopedLive("the listener gone mid-call: lost (the command may have run), and the next call connects again", () =>
    Effect.gen(function*() {
      const secret = Crypto.randomBytes(32)
      const arrived = yield* Deferred.make<void>()
      const listener = yield* startListener(secret, controlOf(() => Effect.zipRight(Deferred.succeed(arrived, undefined), Effect.never)))
      const peers = yield* makePeers(secret)
      const call = yield* Effect.fork(peers.call(listener.address, 7, SAY, BOUND))
      yield* Deferred.await(arrived)
      yield* listener.close
      expect(yield* call.await).toEqual(Exit.succeed({ _tag: "lost" }))

      const next = yield* startListener(secret, controlOf(() => Effect.void))
      expect(yield* peers.call(next.address, 7, SAY, BOUND)).toEqual({ _tag: "done" })
    }))

  it.scopedLive("a call interrupted by its bound leaves the connection serving the next", () =>
    Effect.gen(function*() {
      const secret = Crypto.randomBytes(32)
      const listener = yield* hangingListener(secret)
      const peers = yield* makePeers(secret)
      const bounded = yield* peers.call(listener.address, 7, { ...SAY, text: "hang" }, BOUND).pipe(Effect.timeout("100 millis"), Effect.exit)
      expect(Exit.isFailure(bounded)).toBe(true)
      expect(yield* peers.call(listener.address, 7, SAY, BOUND)).toEqual({ _tag: "done" })
    }))

  it.scopedLive("past its deadline a call answers timeout, and the connection serves the next", () =>
    Effect.gen(function*() {
      const secret = Crypto.randomBytes(32)
      const listener = yield* hangingListener(secret)
      const peers = yield* makePeers(secret)
      expect(yield* peers.call(listener.address, 7, { ...SAY, text: "hang" }, 100)).toEqual({ _tag: "timeout" })
      expect(yield* peers.call(listener.address, 7, SAY, BOUND)).toEqual({ _tag: "done" })
    }))

  it.scopedLive("a malformed request from an authenticated caller closes the connection and runs nothing", () =>
    Effect.gen(function*() {
      const secret = Crypto.randomBytes(32)
      let calls = 0
      const listener = yield* startListener(secret, controlOf(() => Effect.sync(() => void calls++)))
      const received = yield* Effect.async<Array<unknown>>((resume) => {
        const frames: Array<unknown> = []
        const mine = nonce()
        const socket = Net.connect(listener.address.port, listener.address.host)
        const reader = new FrameReader((value) => {
          frames.push(value)
          const greeting = value as { readonly hello?: string }
          if (greeting.hello !== undefined) {
            socket.write(`${JSON.stringify({ nonce: mine, proof: proof(secret, "caller", greeting.hello, mine) })}\n`)
          } else {
            // Authenticated: a request whose network is no number, then a well-formed one that must not run.
            socket.write(`${JSON.stringify({ id: 1, network: "seven", command: SAY })}\n`)
            socket.write(`${JSON.stringify({ id: 2, network: 7, command: SAY })}\n`)
          }
        })
        socket.setEncoding("utf8")
        socket.on("data", (chunk: string) => void reader.feed(chunk))
        socket.on("error", () => {})
        socket.on("close", () => resume(Effect.succeed(frames)))
      })
      // The greeting and the listener's proof came back, no answer; the connection was then closed.
      expect(received.map((frame) => Object.keys(frame as object))).toEqual([["hello"], ["proof"]])
      expect(calls).toBe(0)
    }))
})
