/**
 * DirectListener: this node's end of the direct command channel (DirectWire.ts; docs/decisions/several-nodes.md "Several nodes",
 * the direct path): a TCP listener on the host of BELAY_CLUSTER_ADDRESS, at BELAY_CLUSTER_DIRECT_PORT (0, the
 * default: a free port; callers learn the actual one from the network's entity, never from configuration).
 *
 * The fence: a command is run only if the network's actor runs here AND this node holds the network's shard now
 * (NodeActors' `holds`), checked as the request arrives; otherwise the answer is `notHere` and the caller takes the
 * entity path, whose owner is the cluster's to decide. So a node that lost a network never drives it, whatever a
 * caller's cache says.
 *
 * Concurrency rule: the socket callbacks run on the event loop, one at a time; each accepted request is its own fiber
 * on the layer's runtime, answered when it ends (a connection gone by then drops the answer); the answers of one
 * event-loop turn leave in one write (FrameWriter). Closing the layer
 * closes the listener and every connection, and interrupts the commands still running.
 */
import * as Net from "node:net"
import { Cause, Context, Effect, Exit, Fiber, Layer, Option, Runtime, type Scope } from "effect"
import type { NetworkControlService } from "../actors/NetworkApi.js"
import { NotConnected, type ToolFailure } from "../schema/ToolErrors.js"
import { AppConfig } from "../services/AppConfig.js"
import { SecretBox } from "../services/crypto/SecretBox.js"
import {
  CHANNEL_KEY_PURPOSE,
  decodeRequest,
  type DirectAddress,
  encodeFailure,
  execute,
  frame,
  HANDSHAKE_TIMEOUT_MS,
  FrameReader,
  FrameWriter,
  isCallerProof,
  nonce,
  proof,
  proofMatches
} from "./DirectWire.js"
import { NodeActors } from "./NodeActors.js"

export interface DirectListenerService {
  /** Where callers reach this node's listener. */
  readonly address: DirectAddress
}

export class DirectListener extends Context.Tag("belay/cluster/DirectListener")<DirectListener, DirectListenerService>() {}

export interface ListenOptions {
  readonly host: string
  readonly port: number
  /** The channel's key, derived from BELAY_SECRET_KEY (SecretBox `derive`). */
  readonly secret: Buffer
  /** Whether this node runs the network's actor and holds its shard right now. */
  readonly accepts: (networkId: number) => boolean
  readonly control: NetworkControlService
}

/** The listener, open for the scope's life. */
export const listen = (options: ListenOptions): Effect.Effect<DirectListenerService, Error, Scope.Scope> =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const sockets = new Set<Net.Socket>()
    const running = new Set<Fiber.RuntimeFiber<void, ToolFailure>>()
    const fork = Runtime.runFork(runtime)

    const serve = (socket: Net.Socket) => {
      sockets.add(socket)
      socket.setNoDelay(true)
      socket.setEncoding("utf8")
      const mine = nonce()
      let authenticated = false
      const handshake = setTimeout(() => socket.destroy(), HANDSHAKE_TIMEOUT_MS)
      const writer = new FrameWriter(socket)
      const send = (value: unknown) => {
        if (!socket.destroyed) writer.write(frame(value))
      }

      const onRequest = (value: unknown) => {
        const decoded = decodeRequest(value)
        if (decoded._tag === "Left") {
          socket.destroy()
          return
        }
        const { command, id, network } = decoded.right
        if (!options.accepts(network)) return send({ id, notHere: true })
        const fiber = fork(execute(options.control, network, command))
        running.add(fiber)
        fiber.addObserver((exit) => {
          running.delete(fiber)
          if (Exit.isSuccess(exit)) return send({ id, ok: true })
          // A defect or an interruption on the way is no tool failure: `not-connected`, as on the entity path
          // (ClusterNetworkControl's `remote`), rather than a caller left to its bound.
          const failure = Option.getOrElse(Cause.failureOption(exit.cause), () => new NotConnected({ networkId: network }))
          send({ id, error: encodeFailure(failure) })
        })
      }

      const reader = new FrameReader((value) => {
        if (authenticated) return onRequest(value)
        if (!isCallerProof(value) || !proofMatches(proof(options.secret, "caller", mine, value.nonce), value.proof)) {
          socket.destroy()
          return
        }
        authenticated = true
        clearTimeout(handshake)
        send({ proof: proof(options.secret, "listener", value.nonce, mine) })
      })
      socket.on("data", (chunk: string) => {
        if (!reader.feed(chunk)) socket.destroy()
      })
      socket.on("error", () => socket.destroy())
      socket.on("close", () => {
        clearTimeout(handshake)
        sockets.delete(socket)
      })
      send({ hello: mine })
    }

    const server = Net.createServer(serve)
    const port = yield* Effect.async<number, Error>((resume) => {
      server.once("error", (error) => resume(Effect.fail(error)))
      server.listen(options.port, options.host, () => {
        const bound = server.address()
        resume(Effect.succeed(typeof bound === "object" && bound !== null ? bound.port : options.port))
      })
    })
    yield* Effect.addFinalizer(() =>
      Effect.zipRight(
        Effect.sync(() => {
          server.close()
          for (const socket of sockets) socket.destroy()
        }),
        Fiber.interruptAll(running)
      )
    )
    return { address: { host: options.host, port } }
  })

/** The listener of this node: on its cluster host, running commands on NodeActors' port behind the fence. */
export const DirectListenerLive = Layer.scoped(
  DirectListener,
  Effect.gen(function*() {
    const config = yield* AppConfig
    const box = yield* SecretBox
    const { control, holds, local } = yield* NodeActors
    const cluster = Option.getOrThrow(config.clusterAddress)
    return yield* listen({
      host: cluster.host,
      port: config.clusterDirectPort,
      secret: box.derive(CHANNEL_KEY_PURPOSE),
      accepts: (networkId) => local.running(networkId) !== undefined && holds(networkId),
      control
    }).pipe(Effect.orDie)
  })
)
