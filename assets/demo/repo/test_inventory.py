import unittest

from inventory import Inventory


class InventoryTest(unittest.TestCase):
    def test_add_and_total(self):
        inv = Inventory()
        inv.add("apples", 3)
        inv.add("pears", 2)
        self.assertEqual(inv.total(), 5)

    def test_remove_too_many(self):
        inv = Inventory()
        inv.add("apples", 1)
        with self.assertRaises(ValueError):
            inv.remove("apples", 2)

    def test_low_stock_includes_threshold(self):
        inv = Inventory()
        inv.add("apples", 5)
        inv.add("pears", 9)
        self.assertEqual(inv.low_stock(5), ["apples"])


if __name__ == "__main__":
    unittest.main()
