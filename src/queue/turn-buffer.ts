/**
 * What is added during one turn of the event loop, handed on together once the turn is over (or at
 * `flush`): what crosses to another thread goes as one message per turn, not one per item.
 */
export class TurnBuffer<Item> {
  private items: Item[] = [];

  constructor(private readonly handOn: (items: Item[]) => void) {}

  add(item: Item): void {
    if (this.items.length === 0) setImmediate(() => this.flush());
    this.items.push(item);
  }

  flush(): void {
    if (this.items.length === 0) return;
    const items = this.items;
    this.items = [];
    this.handOn(items);
  }
}
