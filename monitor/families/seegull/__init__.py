"""SeeGULL Multilingual (Bhutani et al., ACL 2024) in five Indian languages: whether a
local causal LM ties an attribute to the identity annotators in India tie it to, in the
tuple's own language. One folder on the family plug-in contract; see docs/seegull.md."""
