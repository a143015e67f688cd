/** Names a side output. The type parameter ties the tag to the records it carries. */
export class OutputTag<T> {
  declare readonly __type?: T;
  constructor(readonly id: string) {
    if (id.length === 0) throw new TypeError('OutputTag id must be a non-empty string');
  }
}
