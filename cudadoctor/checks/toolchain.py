"""(being written)"""

CHECKS = ()
