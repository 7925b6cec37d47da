
TOP              = $(_HERE_)/..
(trimmed)
