"""Pantry: track what is in the cupboard."""
import json
import sys
from pathlib import Path

STORE = Path(__file__).with_name("pantry.json")
LOW = 1  # TODO: let each item have its own threshold


def load():
    if not STORE.exists():
        return {}
    return json.loads(STORE.read_text())


def save(items):
    STORE.write_text(json.dumps(items, indent=2, sort_keys=True))


def add(items, name, count):
    items[name] = items.get(name, 0) + count


def take(items, name, count):
    # FIXME: taking more than there is goes negative instead of refusing
    items[name] = items.get(name, 0) - count


def low(items):
    return sorted(name for name, count in items.items() if count <= LOW)


def main(argv):
    items = load()
    command, *rest = argv or ["low"]
    if command == "add":
        add(items, rest[0], int(rest[1]))
    elif command == "take":
        take(items, rest[0], int(rest[1]))
    elif command == "low":
        print("\n".join(low(items)) or "nothing is low")
        return
    save(items)


if __name__ == "__main__":
    main(sys.argv[1:])
