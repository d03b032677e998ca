from iolens.entry import main

main()
