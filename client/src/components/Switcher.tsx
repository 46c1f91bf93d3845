// Switcher: Ctrl+K's "Jump to a buffer" dialog — a combobox whose list is every buffer the query names (Keyboard.ts
// rankItems), best first. ↑/↓ move through the list, Enter opens the chosen buffer, Escape (or a click outside) closes
// and gives the focus back to where it was. The WAI-ARIA combobox pattern (APG "Combobox", list popup): focus stays in
// the input, the chosen option is its aria-activedescendant. KeyboardLayer installs the page's shortcuts (Keyboard.ts
// reads the keys) and draws the dialog when asked; App renders it once.
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks"
import { keyAction, rankItems, stepIndex, type SwitchItem } from "../Keyboard.js"
import { parseHash } from "../Route.js"
import type { Store } from "../Store.js"

/** Every buffer of the store as the switcher lists it. */
const switchItems = (store: Store): ReadonlyArray<SwitchItem> =>
  [...store.buffers.values()].map((b) => {
    const network = store.networks.get(b.networkId)?.name ?? `network ${b.networkId}`
    return {
      key: b.key,
      networkId: b.networkId,
      target: b.target,
      label: b.kind === "server" ? network : b.target,
      network,
      unread: b.unread,
      highlights: b.highlights
    }
  })

/** The sidebar's buffer links, in the order it draws them; not those folded away in a closed group. */
const sidebarLinks = (): ReadonlyArray<HTMLAnchorElement> =>
  [...document.querySelectorAll<HTMLAnchorElement>("#sidebar a[href^='#/b/']")].filter((a) => a.closest("details:not([open])") === null)

/**
 * Puts the caret in the composer once the buffer is drawn: the member who switched by keyboard types next. A modal
 * dialog opened in the meantime (Ctrl+K pressed right after Alt+↑) keeps the focus: the caret moving behind it would
 * leave the member typing into a field they cannot see.
 */
const focusComposer = () =>
  requestAnimationFrame(() => {
    if (document.querySelector("[role=dialog][aria-modal=true]") !== null) return
    document.querySelector<HTMLTextAreaElement>("textarea[aria-label='Message']")?.focus()
  })

const follow = (store: Store, link: HTMLAnchorElement | undefined) => {
  const route = link === undefined ? null : parseHash(link.getAttribute("href") ?? "")
  if (route === null) return
  store.route(route)
  focusComposer()
}

/**
 * Listens for the shortcuts on the whole page, in the capture phase (so a focused composer, whose plain ↑/↓ walk its
 * history, never sees the keys handled here); returns the function that stops listening.
 */
const installKeyboard = (store: Store, openSwitcher: () => void): (() => void) => {
  const onKey = (e: KeyboardEvent) => {
    if (e.defaultPrevented || e.isComposing) return
    const action = keyAction(e)
    if (action === null) return
    e.preventDefault()
    e.stopPropagation()
    if (action.kind === "switcher") return openSwitcher()
    const links = sidebarLinks()
    if (action.kind === "nth") return follow(store, links[action.index])
    const current = links.findIndex((a) => a.getAttribute("aria-current") === "page")
    follow(store, links[stepIndex(current, links.length, action.delta)])
  }
  document.addEventListener("keydown", onKey, { capture: true })
  return () => document.removeEventListener("keydown", onKey, { capture: true })
}

const optionId = (i: number) => `switcher-option-${i}`

export const Switcher = ({ store, onClose }: { readonly store: Store; readonly onClose: () => void }) => {
  const [query, setQuery] = useState("")
  const [chosen, setChosen] = useState(0)
  const input = useRef<HTMLInputElement>(null)
  const previous = useRef<Element | null>(document.activeElement)
  const matches = rankItems(query, switchItems(store), 12)
  const index = Math.min(chosen, matches.length - 1)
  // Before the browser paints: the dialog is never shown without the caret in its input, so the keys typed right
  // after Ctrl+K go to the query.
  useLayoutEffect(() => {
    input.current?.focus()
    const back = previous.current
    return () => {
      if (back instanceof HTMLElement && back.isConnected) back.focus()
    }
  }, [])
  const open = (i: number) => {
    const item = matches[i]
    if (item === undefined) return
    previous.current = null
    onClose()
    store.openBuffer(item.networkId, item.target)
    focusComposer()
  }
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault()
      if (matches.length > 0) setChosen((index + (e.key === "ArrowDown" ? 1 : matches.length - 1)) % matches.length)
    } else if (e.key === "Enter") {
      e.preventDefault()
      open(index)
    } else if (e.key === "Escape") {
      e.preventDefault()
      onClose()
    } else if (e.key === "Tab") {
      // A modal dialog keeps the focus inside it (its one control is the input).
      e.preventDefault()
    }
  }
  return (
    <div class="switcher-backdrop" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <div class="switcher" role="dialog" aria-modal="true" aria-labelledby="switcher-title">
        <h2 id="switcher-title">Jump to a buffer</h2>
        <input
          ref={input}
          type="text"
          role="combobox"
          aria-label="Buffer name"
          aria-autocomplete="list"
          aria-expanded={matches.length > 0}
          aria-controls={matches.length > 0 ? "switcher-list" : undefined}
          aria-activedescendant={index >= 0 ? optionId(index) : undefined}
          autocomplete="off"
          spellcheck={false}
          value={query}
          onInput={(e) => {
            setQuery(e.currentTarget.value)
            setChosen(0)
          }}
          onKeyDown={onKeyDown}
        />
        {matches.length === 0 ? <p class="muted" role="status">No buffer is named like that.</p> : (
          <ul id="switcher-list" role="listbox" aria-label="Buffers found">
            {matches.map((item, i) => (
              <li
                key={item.key}
                id={optionId(i)}
                role="option"
                aria-selected={i === index}
                class={i === index ? "chosen" : undefined}
                onClick={() => open(i)}
              >
                <span class="name">{item.label}</span>
                {item.label === item.network ? null : <span class="muted"> {item.network}</span>}
                {item.unread > 0 ? <span class={item.highlights > 0 ? "count highlight" : "count"}>{item.unread}</span> : null}
              </li>
            ))}
          </ul>
        )}
        <p class="switcher-help muted">↑ ↓ to choose, Enter to open, Esc to close. Alt+1…9 and Alt+↑ ↓ switch buffers too.</p>
      </div>
    </div>
  )
}

/** The page's shortcuts, and the switcher they open. */
export const KeyboardLayer = ({ store }: { readonly store: Store }) => {
  const [open, setOpen] = useState(false)
  useEffect(() => installKeyboard(store, () => setOpen(true)), [store])
  return open ? <Switcher store={store} onClose={() => setOpen(false)} /> : null
}
