import type { AlignmentGroups } from './alignment-groups.ts';

/** How a source task shares its watermark with its alignment group and learns the group's minimum. */
export interface AlignmentLink {
  /** `watermark` undefined: the member is idle or finished and holds nobody back. */
  report(group: string, member: string, watermark: number | undefined): void;
  /** `listener` receives each new minimum of `group`, on whatever thread the link delivers it. */
  subscribe(group: string, listener: (minimum: number) => void): void;
}

class Listeners {
  private readonly byGroup = new Map<string, ((minimum: number) => void)[]>();

  add(group: string, listener: (minimum: number) => void): void {
    this.byGroup.set(group, [...(this.byGroup.get(group) ?? []), listener]);
  }

  deliver(group: string, minimum: number): void {
    for (const listener of this.byGroup.get(group) ?? []) listener(minimum);
  }
}

/** Every member runs on this thread: reports go straight to the groups' minimums. */
export class LocalAlignmentLink implements AlignmentLink {
  private readonly listeners = new Listeners();

  constructor(private readonly groups: AlignmentGroups) {}

  report(group: string, member: string, watermark: number | undefined): void {
    const minimum = this.groups.report(group, member, watermark);
    if (minimum !== undefined) this.listeners.deliver(group, minimum);
  }

  subscribe(group: string, listener: (minimum: number) => void): void {
    this.listeners.add(group, listener);
    listener(this.groups.minimum(group));
  }
}

/**
 * A worker thread's end: reports are sent to the coordinating thread, which owns the AlignmentGroups and sends
 * every new minimum to every worker (`deliver`).
 */
export class MessageAlignmentLink implements AlignmentLink {
  private readonly listeners = new Listeners();

  constructor(private readonly send: (group: string, member: string, watermark: number | undefined) => void) {}

  report(group: string, member: string, watermark: number | undefined): void {
    this.send(group, member, watermark);
  }

  subscribe(group: string, listener: (minimum: number) => void): void {
    this.listeners.add(group, listener);
  }

  deliver(group: string, minimum: number): void {
    this.listeners.deliver(group, minimum);
  }
}
