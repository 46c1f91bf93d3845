// Connection: the tab's one WebSocket to `/api/ws` (docs/contract.md "The member's browser surface", WebSocket). It opens
// again by itself after any close but a revoked credential (4001: back to sign-in), waiting 0.5 s and doubling up to
// 15 s (with jitter, so that the tabs of a restarted server do not all come back in the same instant), and at once
// when the browser says it is online again. Each reopening asks `?since=<newest message id seen>`, so the server
// replays exactly what was missed (or says `resync`). Tool calls are `call` frames answered by `result` frames with
// the same id; a call made while closed, or cut by a close, fails at once with ConnectionLost.
//
// Concurrency rule: the browser's event loop is the only thread; every callback runs to completion.
import type { CallResult, ClientServerFrame } from "./Protocol.js"

export type ConnectionPhase =
  | { readonly phase: "connecting"; readonly attempt: number }
  | { readonly phase: "open" }
  | { readonly phase: "waiting"; readonly attempt: number; readonly retryAt: number }
  | { readonly phase: "signed-out" }

export class ConnectionLost extends Error {
  constructor() {
    super("Not connected to Belay; try again once the connection is back.")
  }
}

const RETRY_FIRST_MS = 500
const RETRY_MAX_MS = 15_000
/** A call that gets no answer in this time fails (the server's own tool timeouts are shorter). */
const CALL_TIMEOUT_MS = 60_000

interface Pending {
  readonly resolve: (r: CallResult) => void
  readonly reject: (e: Error) => void
  readonly timer: number
}

export interface ConnectionEvents {
  readonly frame: (frame: ClientServerFrame) => void
  readonly phase: (phase: ConnectionPhase) => void
}

export class Connection {
  private ws: WebSocket | null = null
  private attempt = 0
  private retryTimer: number | null = null
  private nextId = 1
  private readonly pending = new Map<string, Pending>()
  /** The newest message id this tab has seen: the `since` of the next opening. */
  lastMessageId: number | null = null
  private helloLastMessageId = 0
  /**
   * The buffer the tab opens first, asked with the first opening (`?first=`, src/http/ws/FirstView.ts): its hello
   * then carries the buffer list and that buffer's newest page. Null once a hello came.
   */
  first: string | null = null
  phase: ConnectionPhase = { phase: "connecting", attempt: 0 }

  constructor(private readonly events: ConnectionEvents) {
    addEventListener("online", () => this.reconnectNow())
  }

  start(): void {
    this.open()
  }

  /** Skips the wait (the "Reconnect now" button, the browser coming online). */
  reconnectNow(): void {
    if (this.phase.phase !== "waiting") return
    if (this.retryTimer !== null) clearTimeout(this.retryTimer)
    this.retryTimer = null
    this.open()
  }

  /** Seen a message: the next opening resumes after it. */
  saw(messageId: number): void {
    if (this.lastMessageId === null || messageId > this.lastMessageId) this.lastMessageId = messageId
  }

  /** After a `resync`: the tab reloads what it shows, and resumes from the newest id the server had at `hello`. */
  resync(): void {
    this.lastMessageId = this.helloLastMessageId
  }

  send(frame: Readonly<Record<string, unknown>>): boolean {
    if (this.ws === null || this.ws.readyState !== WebSocket.OPEN || this.phase.phase !== "open") return false
    this.ws.send(JSON.stringify(frame))
    return true
  }

  call(name: string, args: Readonly<Record<string, unknown>>): Promise<CallResult> {
    const id = `c${this.nextId++}`
    return new Promise<CallResult>((resolve, reject) => {
      if (!this.send({ type: "call", id, name, arguments: args })) return reject(new ConnectionLost())
      const timer = window.setTimeout(() => {
        this.pending.delete(id)
        reject(new Error(`${name} got no answer in time.`))
      }, CALL_TIMEOUT_MS)
      this.pending.set(id, { resolve, reject, timer })
    })
  }

  /**
   * Sends a frame of its own type (react, reply, redact, typing: docs/contract.md "The member's browser surface") with an
   * id, and settles on its answer: `result` (a failure when `isError`) or `error` with the same id.
   */
  request(frame: Readonly<Record<string, unknown>>): Promise<void> {
    const id = `r${this.nextId++}`
    return new Promise<void>((resolve, reject) => {
      if (!this.send({ ...frame, id })) return reject(new ConnectionLost())
      const timer = window.setTimeout(() => {
        this.pending.delete(id)
        reject(new Error("Belay gave no answer in time."))
      }, CALL_TIMEOUT_MS)
      const settle = (r: CallResult) => {
        if (!r.isError) return resolve()
        const p = r.payload as { error?: unknown; message?: unknown } | null
        reject(new Error(typeof p?.message === "string" ? p.message : typeof p?.error === "string" ? p.error : "Refused."))
      }
      this.pending.set(id, { resolve: settle, reject, timer })
    })
  }

  private setPhase(phase: ConnectionPhase) {
    this.phase = phase
    this.events.phase(phase)
  }

  private open() {
    this.setPhase({ phase: "connecting", attempt: this.attempt })
    const query = this.lastMessageId !== null
      ? `?since=${this.lastMessageId}`
      : this.first !== null
      ? `?${new URLSearchParams({ first: this.first })}`
      : ""
    const ws = new WebSocket(`${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}/api/ws${query}`)
    this.ws = ws
    ws.onmessage = (e) => {
      if (this.ws !== ws) return
      let frame: ClientServerFrame
      try {
        frame = JSON.parse(String(e.data)) as ClientServerFrame
      } catch {
        return
      }
      if (frame.type === "hello") {
        this.attempt = 0
        // An account with no message yet resumes from 0: what arrives while this tab is away is still replayed.
        if (this.lastMessageId === null) this.lastMessageId = frame.lastMessageId ?? 0
        this.helloLastMessageId = frame.lastMessageId ?? 0
        this.first = null
        this.setPhase({ phase: "open" })
      }
      if (frame.type === "message") this.saw(frame.message.id)
      if ((frame.type === "result" || frame.type === "error") && frame.id !== null) {
        const pending = this.pending.get(String(frame.id))
        if (pending !== undefined) {
          this.pending.delete(String(frame.id))
          clearTimeout(pending.timer)
          if (frame.type === "result") pending.resolve({ isError: frame.isError, payload: frame.payload })
          else pending.reject(new Error(frame.message))
          return
        }
      }
      this.events.frame(frame)
    }
    ws.onclose = (e) => {
      if (this.ws !== ws) return
      this.ws = null
      for (const [id, pending] of this.pending) {
        clearTimeout(pending.timer)
        pending.reject(new ConnectionLost())
        this.pending.delete(id)
      }
      if (e.code === 4001) return this.signedOut()
      this.scheduleRetry()
    }
  }

  private scheduleRetry() {
    this.attempt++
    // After a few failures, ask whether the session is still good: a closed session never opens the socket again.
    if (this.attempt === 3 || this.attempt % 10 === 0) {
      void fetch("/api/auth/me", { credentials: "same-origin" }).then((r) => {
        if (r.status === 401) this.signedOut()
      }, () => undefined)
    }
    const base = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (this.attempt - 1))
    const delay = Math.round(base * (0.75 + Math.random() * 0.5))
    this.setPhase({ phase: "waiting", attempt: this.attempt, retryAt: Date.now() + delay })
    this.retryTimer = window.setTimeout(() => {
      this.retryTimer = null
      this.open()
    }, delay)
  }

  private signedOut() {
    if (this.retryTimer !== null) clearTimeout(this.retryTimer)
    this.retryTimer = null
    this.ws?.close()
    this.ws = null
    this.setPhase({ phase: "signed-out" })
  }
}
