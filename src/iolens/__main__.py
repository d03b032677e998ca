from iolens.cli import main

main()
