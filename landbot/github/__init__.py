"""The GitHub client every stage calls: githubkit wiring, auth, one retry policy, typed operations.

Import what you need from the submodules (`landbot.github.client.GitHubClient`,
`landbot.github.models`, `landbot.github.errors`); this package imports nothing heavy.
"""
