// LinkPreview: the card under a message with a link (Previews.ts). It asks for the preview only once its line is on
// screen or near it (IntersectionObserver), so opening a buffer of a thousand links asks for a screenful; each URL is
// asked once per tab (at most MAX_KEPT answers kept; a refusal that may pass is asked again when drawn again). Drawn
// as text nodes and a same-origin image (Belay's image proxy); nothing at all when the link has no preview. When the
// log was at its newest line, it stays there as the card grows under it.
import { Component, createRef } from "preact"
import { api } from "../Api.js"
import type { LinkPreviewData } from "../Previews.js"

interface State {
  readonly data: LinkPreviewData | null
  readonly imageFailed: boolean
}

const MAX_KEPT = 300
const kept = new Map<string, Promise<LinkPreviewData | null>>()

/** The preview of `url`, or null when it has none (or cannot be had now). */
const loadPreview = (url: string): Promise<LinkPreviewData | null> => {
  const known = kept.get(url)
  if (known !== undefined) return known
  const pending = api<LinkPreviewData | null>("GET", `/api/previews?${new URLSearchParams({ url }).toString()}`).then((answer) => {
    if (answer.ok) return answer.status === 200 ? answer.body : null
    // Too many at once, the server unreachable or failing: asked again when the line is drawn again.
    if (answer.status === 0 || answer.status === 429 || answer.status >= 500) kept.delete(url)
    return null
  })
  if (kept.size >= MAX_KEPT) {
    const oldest = kept.keys().next().value
    if (oldest !== undefined) kept.delete(oldest)
  }
  kept.set(url, pending)
  return pending
}

/** How far outside the view a line asks already, so its card is there when it scrolls in. */
const AHEAD = "300px 0px"
const AT_BOTTOM = 48

export class LinkPreview extends Component<{ readonly url: string }, State> {
  private readonly anchor = createRef<HTMLDivElement>()
  private observer: IntersectionObserver | null = null
  private gone = false
  override state: State = { data: null, imageFailed: false }

  override componentDidMount() {
    const el = this.anchor.current
    if (el === null) return
    if (typeof IntersectionObserver === "undefined") return this.load()
    this.observer = new IntersectionObserver((entries) => {
      if (!entries.some((e) => e.isIntersecting)) return
      this.observer?.disconnect()
      this.observer = null
      this.load()
    }, { rootMargin: AHEAD })
    this.observer.observe(el)
  }

  override componentWillUnmount() {
    this.gone = true
    this.observer?.disconnect()
  }

  private load() {
    void loadPreview(this.props.url).then((data) => {
      if (this.gone || data === null) return
      const scroller = this.anchor.current?.closest(".log-scroll") ?? null
      const atBottom = scroller !== null && scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < AT_BOTTOM
      this.setState({ data }, () => {
        if (atBottom && scroller !== null) scroller.scrollTop = scroller.scrollHeight
      })
    })
  }

  override render() {
    const { data, imageFailed } = this.state
    if (data === null) return <div ref={this.anchor} class="preview-anchor" />
    return (
      <div ref={this.anchor} class="preview">
        <a class="preview-card" href={this.props.url} target="_blank" rel="noopener noreferrer nofollow">
          {data.image === null || imageFailed ? null : (
            <img
              class="preview-image"
              src={data.image}
              alt=""
              loading="lazy"
              decoding="async"
              onError={() => this.setState({ imageFailed: true })}
            />
          )}
          <span class="preview-text">
            {data.siteName === null ? null : <span class="preview-site">{data.siteName}</span>}
            {data.title === null ? null : <span class="preview-title">{data.title}</span>}
            {data.description === null ? null : <span class="preview-description">{data.description}</span>}
          </span>
        </a>
      </div>
    )
  }
}
