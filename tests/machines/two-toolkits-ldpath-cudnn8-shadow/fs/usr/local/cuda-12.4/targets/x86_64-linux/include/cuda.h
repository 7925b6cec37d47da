(trimmed)
