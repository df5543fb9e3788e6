// Confirmations in the page (a modal <dialog>), never the browser's confirm(): each names
// what the action deletes, revokes or ends, and its button says the action. `ask()`
// opens it and resolves true when confirmed, false when dismissed (Cancel, Escape).
import type { Child } from 'hono/jsx';
import { useEffect, useRef, useSyncExternalStore } from 'hono/jsx/dom';

export interface Question {
  /** The question, naming the thing: "Revoke the API key ci (sk_1a2b…)?" */
  title: string;
  /** What follows from it. */
  body: Child;
  /** The confirming button's label: the action ("Revoke key"). */
  action: string;
  /** Nothing brings back what it deletes: the dialog says so. */
  irreversible?: boolean;
}

interface Pending extends Question {
  resolve: (yes: boolean) => void;
}

let pending: Pending | undefined;
const listeners = new Set<() => void>();
const subscribe = (listener: () => void) => {
  listeners.add(listener);
  return () => listeners.delete(listener);
};
function setPending(next: Pending | undefined) {
  pending = next;
  for (const listener of listeners) listener();
}

/** Asks in the page; true when the person confirms. One question at a time: a second answers the first no. */
export function ask(question: Question): Promise<boolean> {
  pending?.resolve(false);
  return new Promise((resolve) => setPending({ ...question, resolve }));
}

/** The dialog, rendered once by the app; open while a question waits. */
export function ConfirmHost() {
  const question = useSyncExternalStore(subscribe, () => pending);
  const dialog = useRef<HTMLDialogElement | null>(null);
  useEffect(() => {
    const box = dialog.current;
    if (question && box && !box.open) {
      box.returnValue = '';
      box.showModal();
    }
  }, [question]);
  const answer = (yes: boolean) => {
    const asked = pending;
    setPending(undefined);
    dialog.current?.close();
    asked?.resolve(yes);
  };
  return (
    <dialog
      id="confirm"
      class="confirm"
      aria-labelledby="confirm-title"
      ref={dialog}
      // Escape closes it without an answer: a no.
      onClose={() => pending && answer(false)}
    >
      {question && (
        <>
          <h2 id="confirm-title">{question.title}</h2>
          <div class="confirm-body">
            {question.body}
            {question.irreversible && (
              <p>
                <strong>This cannot be undone.</strong>
              </p>
            )}
          </div>
          <div class="actions">
            <button type="button" class="ghost" onClick={() => answer(false)}>
              Cancel
            </button>
            <button type="button" class="danger-solid" id="confirm-action" onClick={() => answer(true)}>
              {question.action}
            </button>
          </div>
        </>
      )}
    </dialog>
  );
}
