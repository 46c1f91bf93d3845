/**
 * Hostile frames against the cluster's direct command channel (src/cluster/DirectWire.ts, DirectListener.ts,
 * DirectPeers.ts), over real TCP: generated JSON values — any JSON, and objects shaped like the handshake's frames
 * with wrong or mistyped members — sent where a handshake frame belongs, to a listener by a stranger and to a caller
 * by a fake listener. Each connection must be closed at once, nothing run, and the process must stay up; then a caller
 * with the key is still served.
 *
 * Reproducible: fast-check with a fixed seed, printed at the start; FUZZ_SEED overrides it and FUZZ_RUNS (divided by
 * 20) the number of cases.
 */
import * as Crypto from "node:crypto"
import * as Net from "node:net"
import { expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import fc from "fast-check"
import type { NetworkControlService } from "../../src/actors/NetworkApi.js"
import { listen } from "../../src/cluster/DirectListener.js"
import { make as makePeers } from "../../src/cluster/DirectPeers.js"
import { type DirectCommand, HANDSHAKE_TIMEOUT_MS, isListenerGreeting } from "../../src/cluster/DirectWire.js"

const SEED = process.env.FUZZ_SEED !== undefined && process.env.FUZZ_SEED !== "" ? Number(process.env.FUZZ_SEED) : 424242
const RUNS = Math.ceil((process.env.FUZZ_RUNS !== undefined && process.env.FUZZ_RUNS !== "" ? Number(process.env.FUZZ_RUNS) : 10_000) / 20)
const SAY: DirectCommand = { _tag: "Say", kind: "privmsg", target: "#belay", text: "hello" }

/** Any JSON, and near-misses of `{hello}`, `{nonce, proof}`, `{proof}` and a reply. */
const stray: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.record({ hello: fc.jsonValue({ maxDepth: 2 }) }),
  fc.record({ nonce: fc.jsonValue({ maxDepth: 1 }), proof: fc.jsonValue({ maxDepth: 1 }) }),
  fc.record({ nonce: fc.hexaString({ minLength: 32, maxLength: 32 }), proof: fc.hexaString({ minLength: 64, maxLength: 64 }) }),
  fc.record({ proof: fc.jsonValue({ maxDepth: 1 }) }),
  fc.record({ id: fc.jsonValue({ maxDepth: 1 }), ok: fc.jsonValue({ maxDepth: 1 }), error: fc.jsonValue({ maxDepth: 2 }) })
)

/** Connects, writes one frame, and resolves with what came back once the other side closed (or "open" past the bound). */
const strike = (port: number, value: unknown) =>
  Effect.async<string>((resume) => {
    let text = ""
    const socket = Net.connect(port, "127.0.0.1", () => socket.write(`${JSON.stringify(value)}\n`))
    const bound = setTimeout(() => {
      socket.destroy()
      resume(Effect.succeed("open"))
    }, HANDSHAKE_TIMEOUT_MS / 2)
    socket.setEncoding("utf8")
    socket.on("data", (chunk: string) => (text += chunk))
    socket.on("error", () => {})
    socket.on("close", () => {
      clearTimeout(bound)
      resume(Effect.succeed(text))
    })
  })

it.scopedLive(`direct channel: ${RUNS} hostile handshake frames each way (seed ${SEED})`, () =>
  Effect.gen(function*() {
    console.log(`direct channel fuzz: seed ${SEED}, ${RUNS} cases`)
    const secret = Crypto.randomBytes(32)
    let calls = 0
    const control = { say: () => Effect.sync(() => void calls++) } as Pick<NetworkControlService, "say">
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const listener = yield* listen({
      host: "127.0.0.1",
      port: 0,
      secret,
      accepts: () => true,
      control: { ...control } as NetworkControlService
    }).pipe(Scope.extend(scope))
    const cases = fc.sample(stray, { seed: SEED, numRuns: RUNS })

    // A stranger's frame where the caller's proof belongs: only the greeting comes back, then the close.
    const wrong: Array<string> = []
    yield* Effect.forEach(cases, (value) =>
      Effect.map(strike(listener.address.port, value), (answer) => {
        const frames = answer.trim() === "" || answer === "open" ? [] : answer.trim().split("\n")
        if (answer === "open" || frames.length !== 1 || Object.keys(JSON.parse(frames[0]!)).join() !== "hello") {
          wrong.push(`${JSON.stringify(value).slice(0, 80)} → ${answer.slice(0, 80)}`)
        }
      }), { concurrency: 20, discard: true })
    expect(wrong.slice(0, 10), `seed ${SEED}: ${wrong.length} wrong answers`).toEqual([])
    expect(calls).toBe(0)

    // The same frames from a fake listener, as its greeting (but a well-formed one, which rightly waits for the proof
    // until the handshake's bound): each call is unsent at once.
    const greetings = cases.filter((value) => !isListenerGreeting(value)).slice(0, 100)
    let next = 0
    const fake = Net.createServer((socket) => {
      socket.on("error", () => {})
      socket.write(`${JSON.stringify(greetings[next++ % greetings.length])}\n`)
    })
    yield* Effect.async<void>((resume) => void fake.listen(0, "127.0.0.1", () => resume(Effect.void)))
    yield* Effect.addFinalizer(() => Effect.async<void>((resume) => void fake.close(() => resume(Effect.void))))
    const fakeAddress = fake.address()
    const fakePort = typeof fakeAddress === "object" && fakeAddress !== null ? fakeAddress.port : 0
    const peers = yield* makePeers(secret)
    const started = Date.now()
    for (let i = 0; i < greetings.length; i++) {
      expect(yield* peers.call({ host: "127.0.0.1", port: fakePort }, 7, SAY, HANDSHAKE_TIMEOUT_MS * 2)).toEqual({ _tag: "unsent" })
    }
    // Not one of them waited for the handshake's bound.
    expect(Date.now() - started).toBeLessThan(HANDSHAKE_TIMEOUT_MS)

    // Still itself: a caller with the key is served, and the command ran once.
    expect(yield* peers.call(listener.address, 7, SAY, 30_000)).toEqual({ _tag: "done" })
    expect(calls).toBe(1)
  }), { timeout: 120_000 })
