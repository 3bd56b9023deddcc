"""CSV campaigns: reading a recipients file and sending it in resumable chunks (``unified-
messaging campaign``).
"""
