/**
 * Types for the parts of irc-framework 4.14 (CommonJS, ships no types) that Belay's IRC
 * transport uses, read from node_modules/irc-framework/src/*.js. Declarations only; the library's concurrency
 * is Node's event loop: every callback below runs on it, so the transport hands events to the actor's queue.
 *
 * Usage under NodeNext: `import IRC from "irc-framework"` then `new IRC.Client({...})`.
 *
 * Pitfalls the types cannot express (verified in the source):
 * - `raw()` writes its argument verbatim plus CR-LF and does not strip CR/LF: check `Safety.hasLineBreakingChars`.
 * - `raw()` while disconnected is dropped silently (`connection.write` returns false).
 * - `connected` turns true at socket open, before registration: wait for `registered`.
 * - `auto_reconnect` defaults to true: pass `false` and let the actor's Schedule reconnect.
 * - With `password` set and no `account`, the server password is *also* tried as SASL PLAIN for `nick`
 *   (`getSaslAuth` in handlers/registration.js). Pass `account: {}` to send PASS without SASL.
 * - `version` defaults to "node.js irc-framework" and CTCP VERSION is answered automatically; pass `null` to stop it.
 * - `channel(name)` sends JOIN and leaks listeners; it is left out on purpose.
 */
declare module "irc-framework" {
  namespace IRC {
    /** Tags as irc-framework decodes them: lower-cased keys, unescaped values, `""` for a valueless tag. */
    type Tags = Record<string, string>

    interface SaslAccount {
      readonly account?: string | undefined
      readonly password?: string | undefined
    }

    interface ClientOptions {
      host?: string | undefined
      /** Default 6667. */
      port?: number | undefined
      tls?: boolean | undefined
      /** Passed to `tls.connect`; there is no way to pass a CA. */
      rejectUnauthorized?: boolean | undefined
      /** Default "ircbot". */
      nick?: string | undefined
      username?: string | undefined
      gecos?: string | undefined
      /** Server password (PASS). See the SASL pitfall above. */
      password?: string | undefined
      /** SASL PLAIN credentials (authzid = authcid = `account`). `{}` disables SASL. */
      account?: SaslAccount | undefined
      /** "PLAIN" (default) or "EXTERNAL" (needs `client_certificate`). */
      sasl_mechanism?: string | undefined
      client_certificate?: { readonly private_key: string; readonly certificate: string } | undefined
      /** Default false: registration goes on after a SASL failure. */
      sasl_disconnect_on_fail?: boolean | undefined
      /** Default true. */
      auto_reconnect?: boolean | undefined
      auto_reconnect_max_wait?: number | undefined
      auto_reconnect_max_retries?: number | undefined
      /** Seconds between client PINGs after registration; 0 disables. Default 30. */
      ping_interval?: number | undefined
      /** Seconds without data before `ping timeout` and a QUIT; 0 disables. Default 120. */
      ping_timeout?: number | undefined
      enable_chghost?: boolean | undefined
      enable_setname?: boolean | undefined
      enable_echomessage?: boolean | undefined
      /** Bytes per chunk used by `say`/`notice`/`action`. Default 350. */
      message_max_length?: number | undefined
      /** Default "utf8". */
      encoding?: string | undefined
      /** CTCP VERSION reply; `null` or "" disables the automatic reply. */
      version?: string | null | undefined
      outgoing_addr?: string | undefined
      socks?: { readonly host: string; readonly port?: number; readonly user?: string; readonly pass?: string } | undefined
      /** The socket class `Connection` builds per connect (default: src/transports/net.js, `NetTransport` below). */
      transport?: (new (options: ClientOptions) => NetTransport) | undefined
      /**
       * Not irc-framework's: Belay's socket class (src/actors/IrcTransport.ts) connects to this address, checked by
       * the destination guard, instead of looking the host up again; TLS verifies `name`. irc-framework passes its
       * options object through to the socket class untouched.
       */
      pinned?: { readonly name: string; readonly address: string; readonly family: 4 | 6 } | undefined
    }

    /**
     * src/transports/net.js: the TCP/TLS socket of one connection attempt, a Node EventEmitter. `onSocketData`
     * appends each read to `incoming_buffer` (Buffer.concat) and emits every complete line, decoded, as `line` (its
     * line break included), which the Connection parses; what is left is a slice of that buffer.
     */
    class NetTransport {
      constructor(options: ClientOptions)
      /** The Client's options object, as given to `connect`. */
      options: ClientOptions
      socket: import("node:net").Socket | null
      /** 0 disconnected, 1 connecting, 2 connected. */
      state: number
      requested_disconnect: boolean
      incoming_buffer: Buffer
      /** Opens the socket (net.connect or tls.connect, looking `options.host` up) and binds its events. */
      connect(): void
      disposeSocket(): void
      setEncoding(encoding: string): boolean
      /** Binds the new socket's events; `connect` calls it right after creating the socket. */
      _onSocketCreate(options: ClientOptions, socket: import("node:net").Socket): void
      /** `obj.on(event, fn)`, undone by `disposeSocket`. `never` arguments: any listener fits, none is typed as `any`. */
      _bindEvent(obj: import("node:events").EventEmitter, event: string, fn: (...args: Array<never>) => void): () => void
      debugOut(message: string): void
      /** The TCP connection is up (before any TLS handshake). */
      onSocketRawConnected(): void
      /** Ready for lines: `connect` on a plain socket, `secureConnect` on a TLS one. Emits `open`. */
      onSocketFullyConnected(): void
      onSocketClose(): void
      onSocketError(error: Error): void
      onSocketTimeout(): void
      onSocketData(data: Buffer): void
      emit(event: string | symbol, ...args: Array<unknown>): boolean
    }

    interface PrefixInfo {
      readonly symbol: string
      readonly mode: string
    }

    /**
     * `network.options`: every 005 token, upper-cased name → value string, or `true` when bare. Only the keys
     * below are parsed; `MODES` stays a string (or `true`), the trailing "are supported" text and `-TOKEN`
     * negations are stored as `true` keys, and nothing is reset on reconnect. Prefer `ISupport.applyISupport`.
     */
    interface NetworkOptions {
      CASEMAPPING?: string
      PREFIX?: Array<PrefixInfo>
      CHANTYPES?: Array<string>
      STATUSMSG?: Array<string>
      CHANMODES?: Array<string>
      CLIENTTAGDENY?: Array<string>
      [token: string]: unknown
    }

    interface NetworkCap {
      negotiating: boolean
      requested: Array<string>
      enabled: Array<string>
      /** Capabilities offered in CAP LS / NEW, with their values ("" when none). */
      available: Map<string, string>
      isEnabled(cap: string): boolean
    }

    interface NetworkInfo {
      /** NETWORK token, else "Network". */
      name: string
      /** Source of RPL_WELCOME. */
      server: string
      ircd: string
      options: NetworkOptions
      cap: NetworkCap
      supports(token: string): unknown
      supportsTag(tag: string): boolean
      isChannelName(name: string): boolean
    }

    interface UserInfo {
      /** Current nick; updated on 001 and our own NICK. */
      nick: string
      username: string
      gecos: string
      host: string
      away: boolean
      modes: Set<string>
    }

    interface Connection {
      connected: boolean
      /** `Date.now()` at 001, `false` before. */
      registered: number | false
      requested_disconnect: boolean
      reconnect_attempts: number
      /** Writes `data` + CR-LF; false (and nothing sent) when not connected. */
      write(data: string, callback?: () => void): boolean
      end(data?: string, had_error?: boolean): void
      /** The socket class `connect` made (the `transport` option's); null before the first `connect`. */
      readonly transport: NetTransport | null
    }

    // ---- Event payloads (only what the handlers set; read the source before relying on more) ----

    interface RawEvent {
      readonly line: string
      readonly from_server: boolean
    }

    interface RegisteredEvent {
      readonly nick: string
      readonly tags: Tags
    }

    interface ReconnectingEvent {
      readonly attempt: number
      readonly max_retries: number
      /** Milliseconds. */
      readonly wait: number
    }

    interface NickErrorEvent {
      readonly nick: string
      readonly reason: string
      readonly tags: Tags
    }

    /**
     * `irc error`: ERROR lines (`error: "irc"`) and the generic numerics of handlers/generics.js under snake_case
     * names (`chanop_privs_needed` for 482, `password_mismatch` for 464…). The numeric itself is not included:
     * correlate by numeric through the `raw` event instead.
     */
    interface IrcErrorEvent {
      readonly error: string
      readonly reason?: string
      readonly channel?: string
      readonly nick?: string
      readonly command?: string
      readonly server?: string
      readonly target_group?: string
    }

    interface SaslFailedEvent {
      /** `fail`, `too_long`, `nick_locked`, `unsupported_mechanism`, `capability_missing`. */
      readonly reason: string
      readonly message?: string
      readonly nick?: string
      readonly time?: number
      readonly tags?: Tags
    }

    interface AccountEvent {
      readonly nick: string
      readonly ident: string
      readonly hostname: string
      /** `false` on logout. */
      readonly account: string | false
      readonly time: number | undefined
      readonly tags: Tags
    }

    interface SourceFields {
      readonly nick: string
      readonly ident: string
      readonly hostname: string
      /** server-time in ms, when the server sent one. */
      readonly time: number | undefined
      readonly tags: Tags
    }

    interface MessageEvent extends SourceFields {
      /** True when the line had no nick in its prefix (a server notice). */
      readonly from_server: boolean
      /** The target without its STATUSMSG prefix; the prefix is in `group`. */
      readonly target: string
      readonly group: string | undefined
      /** For `action`, the text without the CTCP framing. */
      readonly message: string
      readonly account: string | undefined
    }

    interface CtcpEvent extends SourceFields {
      readonly target: string
      /** Upper-cased CTCP command (for requests). */
      readonly type: string | null
      /** The CTCP body without the \x01 delimiters. */
      readonly message: string
      readonly account: string | undefined
    }

    interface JoinEvent extends SourceFields {
      readonly channel: string
      readonly gecos: string
      /** Only with extended-join; `false` for "*". */
      readonly account?: string | false
    }

    interface PartEvent extends SourceFields {
      readonly channel: string
      readonly message: string
    }

    interface KickEvent extends SourceFields {
      readonly channel: string
      readonly kicked: string
      readonly message: string
    }

    interface QuitEvent extends SourceFields {
      readonly message: string
    }

    interface NickEvent extends SourceFields {
      readonly new_nick: string
    }

    interface ModeChangeInfo {
      /** Sign and letter, e.g. "+o". */
      readonly mode: string
      readonly param: string | null | undefined
    }

    interface ModeEvent {
      readonly target: string
      /** Nick of the setter, or the server name. */
      readonly nick: string
      readonly modes: ReadonlyArray<ModeChangeInfo>
      readonly raw_modes: string
      readonly raw_params: ReadonlyArray<string>
      readonly time: number | undefined
      readonly tags: Tags
    }

    /** TOPIC (with `nick`, `time`) or RPL_TOPIC/RPL_NOTOPIC (without; topic "" for 331). */
    interface TopicEvent {
      readonly channel: string
      readonly topic: string
      readonly nick?: string
      readonly time?: number | undefined
      readonly tags: Tags
    }

    interface TopicSetByEvent {
      readonly channel: string
      readonly nick: string
      readonly ident: string
      readonly hostname: string
      /** Unix seconds as sent. */
      readonly when: string
      readonly tags: Tags
    }

    interface UserlistMember {
      readonly nick: string
      readonly ident: string
      readonly hostname: string
      /** Prefix mode letters, in the order the symbols appeared. */
      readonly modes: ReadonlyArray<string>
      readonly tags: Tags
    }

    interface UserlistEvent {
      readonly channel: string
      readonly users: ReadonlyArray<UserlistMember>
      readonly tags: Tags
    }

    interface AwayEvent {
      /** True for 305/306 about ourselves. */
      readonly self: boolean
      readonly nick: string
      readonly message: string
      readonly time: number | undefined
      readonly tags: Tags
    }

    interface ServerOptionsEvent {
      readonly options: NetworkOptions
      readonly cap: ReadonlyArray<string>
      readonly tags: Tags
    }

    /** A parsed line no handler knew (728/729, 467, 478… arrive this way). */
    interface UnknownCommandEvent {
      readonly command: string
      readonly params: ReadonlyArray<string>
      readonly tags: Tags
      readonly prefix: string
      readonly nick: string
      readonly ident: string
      readonly hostname: string
    }

    /** Event name → listener arguments. Events not listed here can still be heard via the string overload. */
    interface ClientEvents {
      /** Every line in both directions, before parsing. */
      raw: [event: RawEvent]
      connecting: []
      "socket connected": []
      /** The socket closed; the error (ECONNREFUSED, TLS failure…) arrives here, never as `socket error`. */
      "socket close": [error: Error | false]
      /** Final close (no auto-reconnect pending). */
      close: [hadError: boolean]
      reconnecting: [event: ReconnectingEvent]
      "ping timeout": []
      registered: [event: RegisteredEvent]
      connected: [event: RegisteredEvent]
      "nick in use": [event: NickErrorEvent]
      "nick invalid": [event: NickErrorEvent]
      "irc error": [event: IrcErrorEvent]
      "sasl failed": [event: SaslFailedEvent]
      loggedin: [event: AccountEvent]
      loggedout: [event: AccountEvent]
      account: [event: AccountEvent]
      "server options": [event: ServerOptionsEvent]
      privmsg: [event: MessageEvent]
      notice: [event: MessageEvent]
      action: [event: MessageEvent]
      "ctcp request": [event: CtcpEvent]
      "ctcp response": [event: CtcpEvent]
      join: [event: JoinEvent]
      part: [event: PartEvent]
      kick: [event: KickEvent]
      quit: [event: QuitEvent]
      nick: [event: NickEvent]
      mode: [event: ModeEvent]
      topic: [event: TopicEvent]
      topicsetby: [event: TopicSetByEvent]
      userlist: [event: UserlistEvent]
      away: [event: AwayEvent]
      back: [event: AwayEvent]
      "unknown command": [event: UnknownCommandEvent]
      debug: [message: string]
    }

    type Listener<K extends keyof ClientEvents> = (...args: ClientEvents[K]) => void

    class Client {
      constructor(options?: ClientOptions)
      static setDefaultTransport(transport: unknown): void

      options: ClientOptions | null
      readonly network: NetworkInfo
      readonly user: UserInfo
      readonly connection: Connection
      /** True from socket open (before registration) until close. */
      readonly connected: boolean
      /**
       * Internal: the command handler, whose `handlers` table every Client builds anew (src/actors/IrcTransport.ts
       * shares one). Not documented by the library; absent in a version that drops it.
       */
      command_handler?: { handlers?: unknown }

      /** Starts connecting with `options` (or the constructor's); ends any current connection first. */
      connect(options?: ClientOptions): void
      /** Sends QUIT and closes; cancels a pending auto-reconnect. */
      quit(message?: string): void
      /**
       * Writes one line. Several arguments are joined with spaces and the last gets ":" when it starts with ":"
       * or contains whitespace; a single string is written as is. No CR/LF check.
       */
      raw(...args: ReadonlyArray<string | number>): void
      raw(args: ReadonlyArray<string | number>): void
      /** The line `raw(...args)` would write. */
      rawString(...args: ReadonlyArray<string | number>): string
      /** PRIVMSG, split on newlines and at `message_max_length` bytes. */
      say(target: string, message: string, tags?: Tags): void
      notice(target: string, message: string, tags?: Tags): void
      /** CTCP ACTION, split like `say`; returns the chunks sent. */
      action(target: string, message: string): Array<string>
      ctcpRequest(target: string, type: string, ...params: ReadonlyArray<string>): void
      ctcpResponse(target: string, type: string, ...params: ReadonlyArray<string>): void
      join(channel: string, key?: string): void
      part(channel: string, message?: string): void
      changeNick(nick: string): void
      mode(target: string, mode: string, extraArgs?: string | ReadonlyArray<string>): void
      setTopic(channel: string, topic: string): void
      ping(message?: string): void
      /** Extra capabilities to request at the next connect. */
      requestCap(cap: string | ReadonlyArray<string>): void
      /** Case-insensitive comparison under the network's CASEMAPPING (ascii, strict-rfc1459, else rfc1459). */
      caseCompare(a: string, b: string): boolean
      caseLower(s: string): string
      caseUpper(s: string): string

      on<K extends keyof ClientEvents>(event: K, listener: Listener<K>): this
      on(event: string, listener: (...args: Array<unknown>) => void): this
      once<K extends keyof ClientEvents>(event: K, listener: Listener<K>): this
      once(event: string, listener: (...args: Array<unknown>) => void): this
      off<K extends keyof ClientEvents>(event: K, listener?: Listener<K>): this
      off(event: string, listener?: (...args: Array<unknown>) => void): this
      removeListener<K extends keyof ClientEvents>(event: K, listener?: Listener<K>): this
      removeListener(event: string, listener?: (...args: Array<unknown>) => void): this
      removeAllListeners(event?: string): this
    }

    /** One parsed line, as `ircLineParser` returns it. */
    class Message {
      constructor(command?: string, ...params: ReadonlyArray<string>)
      tags: Tags
      prefix: string
      nick: string
      ident: string
      hostname: string
      command: string
      params: Array<string>
      to1459(): string
    }

    function ircLineParser(line: string): Message

    const MessageTags: {
      decode(tags: string): Tags
      encode(tags: Readonly<Record<string, string | boolean>>, separator?: string): string
      decodeValue(value: string): string
      encodeValue(value: string): string
    }
  }

  export = IRC
}

declare module "irc-framework/src/transports/net.js" {
  import IRC from "irc-framework"
  const NetTransport: typeof IRC.NetTransport
  export = NetTransport
}
