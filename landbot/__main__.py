from landbot.cli import main

main()
