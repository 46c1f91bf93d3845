// Store: everything the tab shows — networks, buffers (Buffer.ts) with their messages, members, topics, read markers
// and unread counts, nick notes — kept from the socket's frames and the REST answers, and the actions the views call.
// Views subscribe and draw from it; a burst of frames is drawn once (listeners run in a microtask).
//
// Order and completeness: a buffer's messages are kept sorted by id and merged by id, so a page of history and the
// live frames it overlaps never show a line twice. Live messages go into their buffer whether or not its history
// was loaded; loading it later merges the newest page under them. After `resync` every buffer starts again from the
// server. Unread counts start from `GET /api/buffers` (counted on the server, up to its `lastMessageId`) and go on
// with every live message past that id.
//
// Concurrency rule: the browser's one event loop; no method awaits while holding a half-made change.
import { api } from "./Api.js"
import { preferences } from "./Preferences.js"
import { type Buffer, countsAsUnread, kindOf, newBuffer, takeNewestPage, UNREAD_CAP, withRedaction } from "./Buffer.js"
import { bufferKey, fold, serverBuffer } from "./Casemap.js"
import { Connection, type ConnectionPhase } from "./Connection.js"
import { firstWish } from "./FirstView.js"
import { mentions } from "./Highlight.js"
import { mergeById } from "./MergeById.js"
import { bufferHash, parseHash, type Route, sameRoute } from "./Route.js"
import { featuresOf, NO_FEATURES } from "./Protocol.js"
import type { BufferKind, BufferSummary, CallResult, ClientServerFrame, FirstView, MessageRecord, NetworkDetails, NetworkFeatures, NetworkState } from "./Protocol.js"
import { Typing } from "./Typing.js"

export const PAGE = 150

export interface Network {
  readonly id: number
  name: string
  state: NetworkState
  nick: string | null
  away: boolean
  details: NetworkDetails | null
  /** What its upstream connection has now (tags: reactions, replies, typing; redaction: Delete). */
  features: NetworkFeatures
}

export type View =
  | { readonly view: "buffer"; readonly key: string }
  | { readonly view: "networks"; readonly editing?: number }
  | { readonly view: "search" }
  | { readonly view: "mentions" }
  | { readonly view: "none" }

export interface Notice {
  readonly id: number
  readonly text: string
}

export class Store {
  readonly connection: Connection
  account: { name: string; paused: boolean } | null = null
  phase: ConnectionPhase = { phase: "connecting", attempt: 0 }
  readonly networks = new Map<number, Network>()
  readonly buffers = new Map<string, Buffer>()
  /** `${networkId}\n${folded nick}` → note. */
  readonly notes = new Map<string, string>()
  view: View = { view: "none" }
  /** The read marker of the active buffer when it was opened: where the "new messages" line goes. */
  openedReadMarker: number | null = null
  notices: ReadonlyArray<Notice> = []
  /** Who is typing where (`typing` frames). */
  readonly typing = new Typing(() => this.changed())
  /** Whether the member is looking at this tab (focused and visible). */
  focused = document.hasFocus() && document.visibilityState === "visible"
  /** Set by the log: it shows the newest line. */
  atBottom = true
  private started = false
  private listeners = new Set<() => void>()
  private scheduled = false
  private noticeId = 0
  private refreshTimer: number | null = null
  private readTimer: number | null = null
  /** Settles the first buffer list (the hello's first view, else REST); null once it came. */
  private buffersListed: (() => void) | null = null
  onLiveMessage: (buffer: Buffer, message: MessageRecord, highlight: boolean) => void = () => undefined

  constructor() {
    this.connection = new Connection({
      frame: (frame) => this.onFrame(frame),
      phase: (phase) => {
        this.phase = phase
        if (phase.phase !== "connecting" && phase.phase !== "open") this.listBuffers()
        this.changed()
      }
    })
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  changed(): void {
    if (this.scheduled) return
    this.scheduled = true
    queueMicrotask(() => {
      this.scheduled = false
      for (const l of this.listeners) l()
    })
  }

  /**
   * Opens the socket, naming the buffer the tab opens first: its hello carries the networks, the buffers and that
   * buffer's page (FirstView.ts), drawn at once. Network details and preferences come over REST meanwhile, and the
   * buffers when the hello has no first view or the socket failed before one.
   */
  start(): void {
    const listed = new Promise<void>((resolve) => (this.buffersListed = resolve))
    this.connection.first = firstWish()
    this.connection.start()
    preferences.bind(() => this.changed())
    void preferences.load()
    void Promise.all([this.refreshNetworks(), listed]).then(() => this.chooseInitialView())
  }

  /** The first buffer list, over REST (`first` absent) or from the hello's first view, drawn at once with its page. */
  private listBuffers(first?: FirstView) {
    const listed = this.buffersListed
    this.buffersListed = null
    if (first === undefined) {
      if (listed !== null) void this.refreshBuffers().then(listed)
      return
    }
    for (const n of first.networks) Object.assign(this.ensureNetwork(n.id), { name: n.name, state: n.state, nick: n.nick })
    for (const s of first.buffers) this.applySummary(s)
    const open = first.open
    if (open !== null) {
      // The buffer chooseInitialView picks: the one the tab named (FirstView.ts), else the server's pick, made as it is.
      takeNewestPage(this.ensureBuffer(open.networkId, open.target), open.page.messages, open.limit)
      this.chooseInitialView()
    }
    listed?.()
  }

  // ---------------------------------------------------------------------------------------------
  // Lookups

  buffer(networkId: number, target: string): Buffer | undefined {
    return this.buffers.get(bufferKey(networkId, target))
  }

  get activeBuffer(): Buffer | undefined {
    return this.view.view === "buffer" ? this.buffers.get(this.view.key) : undefined
  }

  note(networkId: number, nick: string): string | undefined {
    return this.notes.get(`${networkId}\n${fold(nick)}`)
  }

  setNote(networkId: number, nick: string, note: string): void {
    this.notes.set(`${networkId}\n${fold(nick)}`, note)
    this.changed()
  }

  private ensureBuffer(networkId: number, target: string, kind: BufferKind = kindOf(target)): Buffer {
    const key = bufferKey(networkId, target)
    let buffer = this.buffers.get(key)
    if (buffer === undefined) {
      buffer = newBuffer(key, networkId, target, kind)
      this.buffers.set(key, buffer)
    }
    return buffer
  }

  private ensureNetwork(id: number): Network {
    let network = this.networks.get(id)
    if (network === undefined) {
      network = { id, name: `network ${id}`, state: "offline", nick: null, away: false, details: null, features: NO_FEATURES }
      this.networks.set(id, network)
      this.ensureBuffer(id, serverBuffer(id), "server")
    }
    return network
  }

  private isHighlight(buffer: Buffer, m: MessageRecord): boolean {
    if (!countsAsUnread(m)) return false
    if (buffer.kind === "query") return true
    return buffer.kind === "channel" && mentions(m.text, this.networks.get(buffer.networkId)?.nick ?? null)
  }

  /** Counts from the messages held, past the read marker: used when the marker moves inside what is loaded. */
  private recount(buffer: Buffer) {
    const marker = buffer.readMessageId ?? 0
    if (buffer.lastMessageId !== null && marker >= buffer.lastMessageId) {
      buffer.unread = 0
      buffer.highlights = 0
      return
    }
    const oldest = buffer.messages[0]?.id
    if (!buffer.loaded || oldest === undefined || oldest > marker + 1 && buffer.hasOlder) {
      this.scheduleBufferRefresh()
    }
    let unread = 0
    let highlights = 0
    for (const m of buffer.messages) {
      if (m.id <= marker || !countsAsUnread(m)) continue
      unread++
      if (this.isHighlight(buffer, m)) highlights++
    }
    buffer.unread = Math.min(UNREAD_CAP, unread)
    buffer.highlights = Math.min(UNREAD_CAP, highlights)
  }

  // ---------------------------------------------------------------------------------------------
  // Frames

  private onFrame(frame: ClientServerFrame) {
    switch (frame.type) {
      case "hello": {
        this.account = frame.account
        // The first hello: the REST reads started with the page (start()); a later one: read them again, as
        // markers and counts may have moved while the socket was away.
        if (this.started) {
          void preferences.load()
          void this.refreshNetworks()
          void this.refreshBuffers()
        } else this.listBuffers(frame.first)
        this.started = true
        const active = this.activeBuffer
        if (active !== undefined && !active.loaded) void this.loadLatest(active)
        this.sendFocus()
        break
      }
      case "message":
        this.onMessage(frame.message)
        break
      case "resync": {
        this.connection.resync()
        for (const buffer of this.buffers.values()) {
          buffer.messages = []
          buffer.loaded = false
          buffer.hasOlder = true
        }
        void this.refreshBuffers().then(() => {
          const active = this.activeBuffer
          if (active !== undefined) void this.loadLatest(active)
        })
        break
      }
      case "network": {
        const network = this.ensureNetwork(frame.network.id)
        network.name = frame.network.name
        network.state = frame.network.state
        network.nick = frame.network.nick
        network.features = featuresOf(frame.network)
        if (network.state !== "connected") {
          for (const b of this.buffers.values()) if (b.networkId === network.id) b.joined = false
        }
        break
      }
      case "network-removed":
        this.removeNetworkLocally(frame.networkId)
        break
      case "channel": {
        const buffer = this.ensureBuffer(frame.networkId, frame.channel, "channel")
        if (frame.joined) {
          buffer.target = frame.channel
          buffer.joined = true
          buffer.topic = frame.topic
          buffer.members = new Map(frame.members.map((m) => [fold(m.nick), m]))
        } else {
          buffer.joined = false
          buffer.members = new Map()
        }
        break
      }
      case "member": {
        const buffer = this.ensureBuffer(frame.networkId, frame.channel, "channel")
        const members = new Map(buffer.members)
        if (frame.member === null) members.delete(fold(frame.nick))
        else {
          members.delete(fold(frame.nick))
          members.set(fold(frame.member.nick), frame.member)
        }
        buffer.members = members
        break
      }
      case "topic": {
        const buffer = this.ensureBuffer(frame.networkId, frame.channel, "channel")
        buffer.topic = { topic: frame.topic, setBy: frame.setBy, setAt: frame.setAt }
        break
      }
      case "away":
        this.ensureNetwork(frame.networkId).away = frame.away
        break
      case "nick-note":
        this.notes.set(`${frame.networkId}\n${fold(frame.nick)}`, frame.note)
        break
      case "read-marker": {
        const buffer = this.ensureBuffer(frame.networkId, frame.target)
        if (buffer.readMessageId === null || frame.messageId > buffer.readMessageId) buffer.readMessageId = frame.messageId
        this.recount(buffer)
        break
      }
      case "buffer-preference":
      case "client-preferences":
        preferences.onFrame(frame)
        break
      case "typing": {
        const own = this.networks.get(frame.networkId)?.nick
        if (own === undefined || own === null || fold(own) !== fold(frame.nick)) {
          this.typing.onFrame(bufferKey(frame.networkId, frame.target), frame.nick, frame.state)
        }
        break
      }
      case "redaction": {
        const buffer = this.buffer(frame.networkId, frame.target)
        if (buffer !== undefined) buffer.messages = withRedaction(buffer.messages, frame.messageId)
        break
      }
      case "relay-bot":
        // The records of loaded history name the bot's speakers as they were rendered; newer lines follow the mark.
        break
      case "error":
        if (frame.id === null) console.warn("belay:", frame.message)
        break
      case "result":
        break
    }
    this.changed()
  }

  private onMessage(m: MessageRecord) {
    this.ensureNetwork(m.networkId)
    const buffer = this.ensureBuffer(m.networkId, m.target)
    buffer.messages = mergeById(buffer.messages, [m])
    if (m.nick !== null && m.kind !== "react") this.typing.spoke(buffer.key, m.nick)
    if (buffer.lastMessageId === null || m.id > buffer.lastMessageId) buffer.lastMessageId = m.id
    const counted = buffer.countedThrough !== null && m.id <= buffer.countedThrough
    const read = buffer.readMessageId !== null && m.id <= buffer.readMessageId
    if (!counted && !read && countsAsUnread(m)) {
      const highlight = this.isHighlight(buffer, m)
      buffer.unread = Math.min(UNREAD_CAP, buffer.unread + 1)
      if (highlight) buffer.highlights = Math.min(UNREAD_CAP, buffer.highlights + 1)
      this.onLiveMessage(buffer, m, highlight)
    }
    if (m.self && m.kind === "join") {
      // Our own join: the channel is ours to show (the member may just have typed /join).
      buffer.joined = true
    }
    if (this.activeBuffer === buffer) this.maybeMarkRead()
  }

  // ---------------------------------------------------------------------------------------------
  // Loading

  async call(name: string, args: Readonly<Record<string, unknown>>): Promise<CallResult> {
    return this.connection.call(name, args)
  }

  /** Calls a tool and returns its payload, or throws the failure's message. */
  async callOk<A = Record<string, unknown>>(name: string, args: Readonly<Record<string, unknown>>): Promise<A> {
    const result = await this.call(name, args)
    if (result.isError) {
      const p = result.payload as { error?: string; message?: string }
      throw new Error(p.message ?? p.error ?? `${name} failed`)
    }
    return result.payload as A
  }

  async refreshNetworks(): Promise<void> {
    const rest = await api<{ networks: ReadonlyArray<NetworkDetails> }>("GET", "/api/networks")
    if (rest.ok) {
      for (const d of rest.body.networks) {
        const network = this.ensureNetwork(d.id)
        network.details = d
        network.name = d.name
        network.state = d.state
        network.nick = d.currentNick
      }
    } else {
      // Before the REST route existed: the MCP tool says as much as the sidebar needs.
      const listed = await this.callOk<{ networks: ReadonlyArray<{ id: number; name: string; state: NetworkState; nick: string | null }> }>(
        "list_networks",
        {}
      ).catch(() => null)
      for (const n of listed?.networks ?? []) {
        const network = this.ensureNetwork(n.id)
        network.name = n.name
        network.state = n.state
        network.nick = n.nick
      }
    }
    this.changed()
  }

  async refreshBuffers(): Promise<void> {
    const rest = await api<{ buffers: ReadonlyArray<BufferSummary> }>("GET", "/api/buffers")
    if (rest.ok) {
      for (const s of rest.body.buffers) this.applySummary(s)
    } else {
      const listed = await this.callOk<{ buffers: ReadonlyArray<{ networkId: number; target: string; kind: string }> }>("list_buffers", {})
        .catch(() => null)
      for (const b of listed?.buffers ?? []) {
        this.ensureNetwork(b.networkId)
        this.ensureBuffer(b.networkId, b.target, b.kind === "channel" ? "channel" : "query")
      }
    }
    this.changed()
  }

  private applySummary(s: BufferSummary) {
    this.ensureNetwork(s.networkId)
    const buffer = this.ensureBuffer(s.networkId, s.target, s.kind)
    buffer.target = s.kind === "server" ? buffer.target : s.target
    if (s.readMessageId !== null && (buffer.readMessageId === null || s.readMessageId > buffer.readMessageId)) {
      buffer.readMessageId = s.readMessageId
    }
    if (s.lastMessageId !== null && (buffer.lastMessageId === null || s.lastMessageId > buffer.lastMessageId)) {
      buffer.lastMessageId = s.lastMessageId
    }
    buffer.countedThrough = s.lastMessageId
    // What the server counted, and the live lines past its count that this tab already holds.
    let unread = s.unread
    let highlights = s.highlights
    for (const m of buffer.messages) {
      if (s.lastMessageId !== null && m.id <= s.lastMessageId) continue
      if (buffer.readMessageId !== null && m.id <= buffer.readMessageId) continue
      if (!countsAsUnread(m)) continue
      unread++
      if (this.isHighlight(buffer, m)) highlights++
    }
    buffer.unread = Math.min(UNREAD_CAP, unread)
    buffer.highlights = Math.min(UNREAD_CAP, highlights)
  }

  private scheduleBufferRefresh() {
    if (this.refreshTimer !== null) return
    this.refreshTimer = window.setTimeout(() => {
      this.refreshTimer = null
      void this.refreshBuffers()
    }, 300)
  }

  async loadLatest(buffer: Buffer): Promise<void> {
    if (buffer.loading || this.phase.phase !== "open") return
    buffer.loading = true
    this.changed()
    try {
      const page = await this.callOk<{ messages: ReadonlyArray<MessageRecord> }>("recent_messages", {
        networkId: buffer.networkId,
        target: buffer.target,
        limit: PAGE
      })
      takeNewestPage(buffer, page.messages, PAGE)
    } catch (e) {
      this.notify(`Could not load ${buffer.target}: ${(e as Error).message}`)
    } finally {
      buffer.loading = false
      this.changed()
    }
    if (this.activeBuffer === buffer) this.maybeMarkRead()
  }

  /** One more page before the oldest line held; false when there is no more. */
  async loadOlder(buffer: Buffer): Promise<boolean> {
    if (buffer.loadingOlder || !buffer.hasOlder || !buffer.loaded) return false
    const oldest = buffer.messages[0]
    if (oldest === undefined) {
      buffer.hasOlder = false
      this.changed()
      return false
    }
    buffer.loadingOlder = true
    this.changed()
    try {
      const page = await this.callOk<{ messages: ReadonlyArray<MessageRecord> }>("recent_messages", {
        networkId: buffer.networkId,
        target: buffer.target,
        before: oldest.id,
        limit: PAGE
      })
      buffer.messages = mergeById(buffer.messages, page.messages)
      buffer.hasOlder = page.messages.length === PAGE
      return page.messages.length > 0
    } catch (e) {
      this.notify(`Could not load older messages: ${(e as Error).message}`)
      return false
    } finally {
      buffer.loadingOlder = false
      this.changed()
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Views and read markers

  private chooseInitialView() {
    if (this.view.view !== "none") return
    const route = parseHash(location.hash)
    if (route !== null) return this.route(route)
    const remembered = localStorage.getItem("belay.lastBuffer")
    if (remembered !== null && this.buffers.has(remembered)) return this.show({ view: "buffer", key: remembered })
    const all = [...this.buffers.values()]
    const first = all.find((b) => b.kind === "channel") ?? all.find((b) => b.kind === "server")
    this.show(first === undefined ? { view: "networks" } : { view: "buffer", key: first.key })
  }

  /** Follows the URL (a link was clicked, Back was pressed). */
  route(route: Route): void {
    if (route.view === "buffer") {
      this.ensureNetwork(route.networkId)
      this.show({ view: "buffer", key: this.ensureBuffer(route.networkId, route.target).key })
    } else this.show(route)
  }

  private hashOf(view: View): string {
    if (view.view === "buffer") {
      const b = this.buffers.get(view.key)
      return b === undefined ? "" : bufferHash(b.networkId, b.target)
    }
    if (view.view === "networks") return view.editing === undefined ? "#/networks" : `#/networks/${view.editing}`
    if (view.view === "search") return "#/search"
    if (view.view === "mentions") return "#/mentions"
    return ""
  }

  show(view: View): void {
    this.view = view
    const hash = this.hashOf(view)
    if (hash !== "" && !sameRoute(location.hash, hash)) history.pushState(null, "", hash)
    if (view.view === "buffer") {
      const buffer = this.buffers.get(view.key)
      if (buffer !== undefined) {
        localStorage.setItem("belay.lastBuffer", buffer.key)
        this.openedReadMarker = buffer.readMessageId
        this.atBottom = true
        if (!buffer.loaded) void this.loadLatest(buffer)
        else this.maybeMarkRead()
      }
    }
    this.changed()
  }

  openBuffer(networkId: number, target: string): void {
    const buffer = this.ensureBuffer(networkId, target)
    this.show({ view: "buffer", key: buffer.key })
  }

  setFocused(focused: boolean): void {
    if (focused === this.focused) return
    this.focused = focused
    this.sendFocus()
    if (focused) this.maybeMarkRead()
  }

  private sendFocus() {
    this.connection.send({ type: "focus", focused: this.focused })
  }

  setAtBottom(atBottom: boolean): void {
    this.atBottom = atBottom
    if (atBottom) this.maybeMarkRead()
  }

  /** The member sees the newest line of the active buffer: its marker moves there, in every tab (a burst: once). */
  maybeMarkRead(): void {
    if (this.readTimer !== null) return
    this.readTimer = window.setTimeout(() => {
      this.readTimer = null
      this.markRead()
    }, 150)
  }

  private markRead(): void {
    const buffer = this.activeBuffer
    if (buffer === undefined || !this.focused || !this.atBottom || !buffer.loaded) return
    const newest = buffer.messages[buffer.messages.length - 1]
    if (newest === undefined || (buffer.readMessageId !== null && newest.id <= buffer.readMessageId)) return
    if (!this.connection.send({ type: "read", networkId: buffer.networkId, target: buffer.target, messageId: newest.id })) return
    buffer.readMessageId = newest.id
    this.recount(buffer)
    this.changed()
  }

  // ---------------------------------------------------------------------------------------------
  // Networks

  removeNetworkLocally(networkId: number): void {
    this.networks.delete(networkId)
    for (const [key, b] of this.buffers) if (b.networkId === networkId) this.buffers.delete(key)
    if (this.view.view === "buffer" && !this.buffers.has(this.view.key)) this.view = { view: "networks" }
    this.changed()
  }

  // ---------------------------------------------------------------------------------------------
  // Notices: short messages about what the member asked for (a failed command), read out by the alert region.

  notify(text: string): void {
    const notice = { id: ++this.noticeId, text }
    this.notices = [...this.notices.slice(-2), notice]
    this.changed()
    window.setTimeout(() => {
      this.notices = this.notices.filter((n) => n !== notice)
      this.changed()
    }, 8000)
  }
}
