// Composer: the "Message" box of the active buffer. Enter sends (Shift+Enter makes a new line); text of several lines
// is sent only after the member confirms it; Tab completes a nick (again: the next match), and moves focus as usual
// when there is nothing to complete; Up and Down walk the lines sent before. The draft is the buffer's (Drafts): kept
// across reloads and shared with the other tabs. A file pasted or dropped here is uploaded (Uploads.ts) with a progress
// bar, and its link is sent to the buffer as a message of its own, leaving the draft as it was. In reply mode (a
// message's Reply, LineActions) the first line sent carries `+draft/reply` (docs/contract.md "The member's browser
// surface"); Escape or "Cancel reply" leaves it. Where the upstream has message-tags, the buffer is told the member is
// typing (OwnTyping).
import { Component, createRef } from "preact"
import type { Buffer } from "../Buffer.js"
import { fold } from "../Casemap.js"
import { COMMANDS, parseInput } from "../Commands.js"
import { onDraftChange, readDraft, writeDraft } from "../Drafts.js"
import { reply as sendReply, sendTyping } from "../MessageActions.js"
import { OwnTyping } from "../OwnTyping.js"
import type { MessageRecord } from "../Protocol.js"
import { excerpt } from "../Replies.js"
import type { Store } from "../Store.js"
import { uploadFile } from "../Uploads.js"

export interface ComposerProps {
  readonly store: Store
  readonly buffer: Buffer
  readonly ownNick: string | null
  readonly disabled: boolean
  /** The upstream has message-tags: typing notices are sent. */
  readonly typing?: boolean
  /** Set while mounted: how a message's Reply puts this composer in reply mode (Preact 11 gives no class refs). */
  readonly replyHandle?: { current: ((message: MessageRecord) => void) | null }
}

/** The message a reply answers, as the reply bar shows it. */
interface ReplyTarget {
  readonly msgid: string
  readonly nick: string | null
  readonly excerpt: string
}

interface State {
  readonly text: string
  readonly sending: boolean
  readonly confirm: { readonly lines: number; readonly text: string } | null
  /** The file being uploaded and how much of it has gone. */
  readonly upload?: { readonly name: string; readonly fraction: number } | null
  readonly reply?: ReplyTarget | null
}

/** Lines sent from this tab, newest last (shared by every buffer, as in most clients). */
const sent: Array<string> = []
const SENT_KEEP = 100

interface Completion {
  readonly start: number
  readonly end: number
  readonly candidates: ReadonlyArray<string>
  readonly index: number
}

export class Composer extends Component<ComposerProps, State> {
  override state: State = { text: readDraft(this.props.buffer.key), sending: false, confirm: null }
  private readonly box = createRef<HTMLTextAreaElement>()
  private completion: Completion | null = null
  private historyIndex: number | null = null
  private unsubscribe: (() => void) | null = null
  /** Set at once, not through the state, so that a second drop in the same moment waits its turn. */
  private uploading = false
  private readonly ownTyping = new OwnTyping()

  private readonly replyToThis = (message: MessageRecord) => this.replyTo(message)

  override componentDidMount() {
    if (this.props.replyHandle !== undefined) this.props.replyHandle.current = this.replyToThis
    this.unsubscribe = onDraftChange((key, text) => {
      if (key === this.props.buffer.key && text !== this.state.text) this.setState({ text })
    })
  }

  override componentWillUnmount() {
    if (this.props.replyHandle?.current === this.replyToThis) this.props.replyHandle.current = null
    this.unsubscribe?.()
    this.tellTyping(this.ownTyping.stop())
  }

  focus() {
    this.box.current?.focus()
  }

  /** Reply mode: what is sent next answers `message`. */
  replyTo(message: MessageRecord) {
    if (message.msgid === undefined) return
    this.setState({ reply: { msgid: message.msgid, nick: message.nick, excerpt: excerpt(message.text) } })
    this.focus()
  }

  private readonly cancelReply = () => {
    this.setState({ reply: null })
    this.focus()
  }

  private setText(text: string) {
    this.setState({ text })
    writeDraft(this.props.buffer.key, text)
    this.tellTyping(this.props.typing === true ? this.ownTyping.input(text, Date.now()) : this.ownTyping.stop())
  }

  private tellTyping(state: "active" | "done" | null) {
    if (state !== null) sendTyping(this.props.store, this.props.buffer, state)
  }

  private readonly onInput = (e: Event) => {
    this.completion = null
    this.historyIndex = null
    this.setText((e.currentTarget as HTMLTextAreaElement).value)
  }

  private readonly onKeyDown = (e: KeyboardEvent) => {
    const box = e.currentTarget as HTMLTextAreaElement
    if (e.key === "Escape" && this.state.reply != null) {
      e.preventDefault()
      this.setState({ reply: null })
      return
    }
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault()
      void this.submit()
      return
    }
    if (e.key === "Tab" && !e.shiftKey && !e.ctrlKey && !e.altKey && !e.metaKey) {
      if (this.complete(box)) e.preventDefault()
      return
    }
    if (e.key !== "Tab") this.completion = null
    if (e.key === "ArrowUp" && !box.value.slice(0, box.selectionStart).includes("\n") && sent.length > 0) {
      e.preventDefault()
      this.historyIndex = this.historyIndex === null ? sent.length - 1 : Math.max(0, this.historyIndex - 1)
      this.setText(sent[this.historyIndex]!)
      return
    }
    if (e.key === "ArrowDown" && this.historyIndex !== null && !box.value.slice(box.selectionEnd).includes("\n")) {
      e.preventDefault()
      this.historyIndex++
      if (this.historyIndex >= sent.length) {
        this.historyIndex = null
        this.setText("")
      } else this.setText(sent[this.historyIndex]!)
    }
  }

  /** Nick (and command) completion at the caret; false when there is nothing to complete. */
  private complete(box: HTMLTextAreaElement): boolean {
    const text = box.value
    let c = this.completion
    if (c === null) {
      const caret = box.selectionStart
      const start = text.slice(0, caret).search(/\S+$/)
      if (start === -1) return false
      const word = text.slice(start, caret)
      const candidates = word.startsWith("/") && start === 0
        ? COMMANDS.map((cmd) => `/${cmd.name}`).filter((name) => name.startsWith(word.toLowerCase()))
        : this.nicks().filter((nick) => fold(nick).startsWith(fold(word)))
      if (candidates.length === 0) return false
      c = { start, end: caret, candidates, index: -1 }
    }
    const index = (c.index + 1) % c.candidates.length
    const choice = c.candidates[index]!
    const suffix = choice.startsWith("/") ? " " : c.start === 0 ? ": " : " "
    const replacement = choice + suffix
    const next = text.slice(0, c.start) + replacement + text.slice(c.end)
    this.completion = { ...c, index, end: c.start + replacement.length }
    // The box and its caret change now, in this key event, and the state follows (the render then finds the value
    // already there and leaves the caret alone). Moving the caret later, in a frame callback, let keys typed right after
    // Tab land before it moved, and the caret then jumped back into the middle of them.
    const caret = c.start + replacement.length
    box.value = next
    box.setSelectionRange(caret, caret)
    this.setText(next)
    return true
  }

  /** Who may be completed: recent speakers first (newest first), then the other members. */
  private nicks(): ReadonlyArray<string> {
    const { buffer, ownNick } = this.props
    const seen = new Set<string>()
    const out: Array<string> = []
    const add = (nick: string | null) => {
      if (nick === null || (ownNick !== null && fold(nick) === fold(ownNick)) || seen.has(fold(nick))) return
      seen.add(fold(nick))
      out.push(nick)
    }
    for (let i = buffer.messages.length - 1; i >= 0 && i >= buffer.messages.length - 300; i--) add(buffer.messages[i]!.nick)
    for (const m of [...buffer.members.values()].sort((a, b) => a.nick.localeCompare(b.nick))) add(m.nick)
    if (buffer.kind === "query") add(buffer.target)
    return out
  }

  /** Files of a paste or a drop: uploaded one after the other, each link sent once its file is stored. */
  private readonly onFiles = (e: Event, files: FileList | null | undefined) => {
    if (files === null || files === undefined || files.length === 0) return
    e.preventDefault()
    void this.uploadAll([...files])
  }

  private readonly onPaste = (e: ClipboardEvent) => this.onFiles(e, e.clipboardData?.files)
  private readonly onDrop = (e: DragEvent) => this.onFiles(e, e.dataTransfer?.files)
  private readonly onDragOver = (e: DragEvent) => {
    if (e.dataTransfer?.types.includes("Files")) e.preventDefault()
  }

  private async uploadAll(files: ReadonlyArray<File>) {
    const { store, buffer, disabled } = this.props
    if (disabled) return store.notify(`Not connected: ${files.length === 1 ? "the file was" : "the files were"} not uploaded.`)
    if (this.uploading) return store.notify("An upload is in progress; drop the next file when it is done.")
    this.uploading = true
    try {
      for (const file of files) {
        this.setState({ upload: { name: file.name, fraction: 0 } })
        const outcome = await uploadFile(file, (fraction) => this.setState({ upload: { name: file.name, fraction } }))
        if (!outcome.ok) return store.notify(outcome.error)
        // Sent as it is: the link alone, so that IRC clients and other people's link previews see it whole.
        await store.callOk("send_message", { networkId: buffer.networkId, target: buffer.target, text: outcome.url })
      }
    } catch (error) {
      store.notify((error as Error).message)
    } finally {
      this.uploading = false
      this.setState({ upload: null })
      this.focus()
    }
  }

  private readonly onSubmit = (e: Event) => {
    e.preventDefault()
    void this.submit()
  }

  private async submit(confirmed = false) {
    const text = this.state.text
    if (text.trim() === "" || this.state.sending) return
    const lines = text.split(/\r?\n/).filter((l) => l.trim() !== "").length
    if (!text.startsWith("/") && lines > 1 && !confirmed) {
      this.setState({ confirm: { lines, text } })
      return
    }
    const { store, buffer } = this.props
    const outcome = parseInput(text, { networkId: buffer.networkId, target: buffer.target })
    if (outcome.kind === "error") {
      store.notify(outcome.message)
      return
    }
    this.setState({ sending: true, confirm: null })
    // Reply mode and plain text: the first line answers the message, the others follow as plain lines.
    const answering = this.state.reply != null && (!text.startsWith("/") || text.startsWith("//")) ? this.state.reply : null
    try {
      for (const [i, call] of outcome.calls.entries()) {
        if (i === 0 && answering !== null && typeof call.arguments["text"] === "string") {
          if (!(await sendReply(store, buffer, answering.msgid, call.arguments["text"]))) return
          this.setState({ reply: null })
        } else await store.callOk(call.name, call.arguments)
      }
      sent.push(text)
      if (sent.length > SENT_KEEP) sent.shift()
      this.historyIndex = null
      this.setText("")
      if (outcome.open !== undefined) store.openBuffer(buffer.networkId, outcome.open.target)
    } catch (error) {
      store.notify((error as Error).message)
    } finally {
      this.setState({ sending: false })
      this.focus()
    }
  }

  override render() {
    const { buffer, ownNick, disabled } = this.props
    const { text, sending, confirm, upload, reply } = this.state
    return (
      <div class="composer-area" onDrop={this.onDrop} onDragOver={this.onDragOver}>
        {upload ? (
          <div class="upload-progress" role="status">
            <span>Uploading {upload.name}…</span>
            <progress max={1} value={upload.fraction} aria-label={`Uploading ${upload.name}`} />
          </div>
        ) : null}
        {confirm === null ? null : (
          <div class="confirm" role="alertdialog" aria-labelledby="confirm-text" aria-modal="false">
            <p id="confirm-text">Send {confirm.lines} lines to {buffer.target}? Each line is one message.</p>
            <button type="button" class="primary" onClick={() => void this.submit(true)} ref={(b) => b?.focus()}>
              Send {confirm.lines} lines
            </button>
            <button type="button" onClick={() => {
              this.setState({ confirm: null })
              this.focus()
            }}>
              Cancel
            </button>
          </div>
        )}
        {reply == null ? null : (
          <div class="replying" role="group" aria-label="Reply">
            <span class="reply-mark" aria-hidden="true">↪</span>
            <span class="replying-text">
              Replying to {reply.nick === null ? "a message" : <strong>{reply.nick}</strong>}
              {reply.excerpt === "" ? null : <span class="muted">: {reply.excerpt}</span>}
            </span>
            <button type="button" class="small" onClick={this.cancelReply}>Cancel reply</button>
          </div>
        )}
        <form class="composer" onSubmit={this.onSubmit}>
          {ownNick === null ? null : <span class="own-nick" aria-hidden="true">{ownNick}</span>}
          <textarea
            ref={this.box}
            aria-label="Message"
            rows={1}
            value={text}
            placeholder={disabled ? "Not connected" : `Message ${buffer.target}`}
            onInput={this.onInput}
            onKeyDown={this.onKeyDown}
            onPaste={this.onPaste}
            enterkeyhint="send"
            spellcheck={true}
            autoComplete="off"
          />
          <button type="submit" disabled={sending || text.trim() === ""}>Send</button>
        </form>
      </div>
    )
  }
}
