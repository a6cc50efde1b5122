"""Small-state code compiled as one scalar kernel (issue 25, item 1): regions of small
static arrays worked per element. Empty until that work lands."""
