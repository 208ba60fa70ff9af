"""A tiny stock keeper for a corner shop."""


class Inventory:
    """Counts of items on the shelves, by name."""

    def __init__(self):
        self.items = {}

    def add(self, name, qty):
        """Put `qty` more of `name` on the shelves."""
        if qty <= 0:
            raise ValueError("quantity must be positive")
        self.items[name] = self.items.get(name, 0) + qty

    def remove(self, name, qty):
        """Take `qty` of `name` off the shelves."""
        have = self.items.get(name, 0)
        if qty > have:
            raise ValueError(f"only {have} {name} left")
        self.items[name] = have - qty

    def total(self):
        """How many items there are in all."""
        return sum(self.items.values())

    def low_stock(self, threshold=5):
        """Names of the items with at most `threshold` left."""
        return [name for name, qty in self.items.items() if qty < threshold]
